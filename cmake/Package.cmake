# The Debian package CPack makes of the install rules (cmake/Install.cmake): `cpack -G DEB` in a
# build tree configured with CMAKE_INSTALL_PREFIX=/usr; scripts/package.sh does both.
set(CPACK_PACKAGE_NAME osbq)
set(CPACK_PACKAGE_VENDOR "osbq")
set(OSBQ_PACKAGE_MAINTAINER "osbq maintainers <osbq@example.org>" CACHE STRING
    "The Maintainer of the Debian package: whoever builds and distributes it")
set(CPACK_PACKAGE_CONTACT "${OSBQ_PACKAGE_MAINTAINER}")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "queue-based Open Service Broker")
set(CPACK_PACKAGE_DESCRIPTION
    "osbq implements the Open Service Broker API 2.0 to 2.17 with stateless HTTP\n\
gateways and workers that share their state in Redis and receive their jobs\n\
over a ZeroMQ bus. This package holds osbq-gateway, osbq-worker, osbq-ctl,\n\
osbq-exec-kit (runs an exec backend's program without a broker), their\n\
systemd units (installed disabled) and the example catalog.")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_STRIP_FILES ON)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION net)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
# Library dependencies from the binaries themselves (dpkg-shlibdeps), plus what the maintainer
# scripts run.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "adduser")
# Redis (7.0 or later) or Valkey (8) may run on another host; a local one is the common start.
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "redis-server | valkey-server")

# Every file under /etc is the operator's to edit: dpkg keeps their edits on upgrade.
set(OSBQ_DEBIAN_CONTROL ${CMAKE_BINARY_DIR}/debian-control)
file(MAKE_DIRECTORY ${OSBQ_DEBIAN_CONTROL})
file(WRITE ${OSBQ_DEBIAN_CONTROL}/conffiles
     "${OSBQ_CONFIG_DIR}/catalog.json\n${OSBQ_CONFIG_DIR}/gateway.env\n${OSBQ_CONFIG_DIR}/worker.env\n")
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${OSBQ_DEBIAN_CONTROL}/conffiles
    ${PROJECT_SOURCE_DIR}/deploy/debian/postinst
    ${PROJECT_SOURCE_DIR}/deploy/debian/prerm
    ${PROJECT_SOURCE_DIR}/deploy/debian/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

# Debian's changelog of the package (the release's own is CHANGELOG.md, installed as
# changelog.gz) and lintian's overrides for what is meant (cmake/Install.cmake).
# Installed with the package's prefix only: elsewhere they describe nothing.
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  execute_process(COMMAND date -u -R -d ${OSBQ_RELEASE_DAY} OUTPUT_VARIABLE OSBQ_RELEASE_DATE
                  OUTPUT_STRIP_TRAILING_WHITESPACE COMMAND_ERROR_IS_FATAL ANY)
  configure_file(deploy/debian/changelog.in ${OSBQ_INSTALL_STAGING}/changelog.Debian @ONLY)
  osbq_gzip_file(${OSBQ_INSTALL_STAGING}/changelog.Debian changelog.Debian)
  install(FILES ${OSBQ_INSTALL_STAGING}/changelog.Debian.gz DESTINATION ${CMAKE_INSTALL_DOCDIR})
  install(FILES deploy/debian/lintian-overrides
          DESTINATION ${CMAKE_INSTALL_DATADIR}/lintian/overrides RENAME osbq)
endif()

include(CPack)
