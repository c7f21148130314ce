# What `cmake --install` puts where. Paths follow GNUInstallDirs: with CMAKE_INSTALL_PREFIX=/usr
# (the Debian package) the configuration goes to /etc/osbq, otherwise under the prefix
# (/usr/local/etc/osbq by default). Decision 0024 says why each file is where it is.
include(GNUInstallDirs)

# The paths the units and the package's conffiles name: absolute, as configured.
set(OSBQ_CONFIG_DIR "${CMAKE_INSTALL_FULL_SYSCONFDIR}/osbq")
set(OSBQ_BIN_DIR "${CMAKE_INSTALL_FULL_BINDIR}")
set(OSBQ_DOC_DIR "${CMAKE_INSTALL_FULL_DOCDIR}")
# Where files are installed: relative to the install prefix, so that `cmake --install --prefix P`
# and DESTDIR stage every file inside them. Only prefixes GNUInstallDirs maps elsewhere (/usr:
# /etc/osbq, and /lib/systemd/system below, as the FHS wants) install outside the prefix;
# DESTDIR still stages them.
if(CMAKE_INSTALL_FULL_SYSCONFDIR STREQUAL "${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_SYSCONFDIR}")
  set(OSBQ_CONFIG_DESTINATION "${CMAKE_INSTALL_SYSCONFDIR}/osbq")
else()
  set(OSBQ_CONFIG_DESTINATION "${OSBQ_CONFIG_DIR}")
endif()
# Debian bookworm's place for units is /lib/systemd/system (the same directory as
# /usr/lib/systemd/system on a merged /usr); a prefix other than /usr keeps them under it, where
# systemd looks too (/usr/local/lib/systemd/system).
if(CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  set(OSBQ_SYSTEMD_UNIT_DIR_DEFAULT "/lib/systemd/system")
else()
  set(OSBQ_SYSTEMD_UNIT_DIR_DEFAULT "lib/systemd/system")
endif()
set(OSBQ_SYSTEMD_UNIT_DIR "${OSBQ_SYSTEMD_UNIT_DIR_DEFAULT}" CACHE PATH
    "Where the systemd units of osbq-gateway and osbq-worker are installed (relative: under the install prefix)")

install(TARGETS osbq-gateway osbq-worker osbq-ctl osbq-exec-kit RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

# Configuration: the example catalog and the units' environment files. The environment files may
# hold secrets; systemd reads them as root, so only root reads them.
install(FILES examples/catalog.json DESTINATION ${OSBQ_CONFIG_DESTINATION})
install(FILES deploy/systemd/gateway.env deploy/systemd/worker.env DESTINATION ${OSBQ_CONFIG_DESTINATION}
        PERMISSIONS OWNER_READ OWNER_WRITE)

foreach(unit osbq-gateway osbq-worker)
  configure_file(deploy/systemd/${unit}.service.in ${CMAKE_BINARY_DIR}/systemd/${unit}.service
                 @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/systemd/${unit}.service DESTINATION ${OSBQ_SYSTEMD_UNIT_DIR})
endforeach()

# Files installed compressed, as Debian and man(1) expect: gzip -n, so the same sources give the
# same bytes.
set(OSBQ_INSTALL_STAGING ${CMAKE_BINARY_DIR}/install-staging)
function(osbq_gzip_file source name)
  add_custom_command(OUTPUT ${OSBQ_INSTALL_STAGING}/${name}.gz
                     COMMAND ${CMAKE_COMMAND} -E make_directory ${OSBQ_INSTALL_STAGING}
                     COMMAND gzip -9nc ${source} > ${OSBQ_INSTALL_STAGING}/${name}.gz
                     DEPENDS ${source} VERBATIM)
  set_property(GLOBAL APPEND PROPERTY OSBQ_GZIPPED ${OSBQ_INSTALL_STAGING}/${name}.gz)
endfunction()

# The release's date, from its section of CHANGELOG.md: the man page and Debian's changelog
# carry it.
file(STRINGS ${PROJECT_SOURCE_DIR}/CHANGELOG.md OSBQ_RELEASE_HEADING
     REGEX "^## \\[${PROJECT_VERSION}\\] - [0-9]+-[0-9]+-[0-9]+$")
if(NOT OSBQ_RELEASE_HEADING)
  message(FATAL_ERROR "CHANGELOG.md has no section \"## [${PROJECT_VERSION}] - YYYY-MM-DD\" "
                      "for the version of project()")
endif()
string(REGEX REPLACE ".* - " "" OSBQ_RELEASE_DAY "${OSBQ_RELEASE_HEADING}")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/CHANGELOG.md)

configure_file(ctl/osbq-ctl.1.in ${OSBQ_INSTALL_STAGING}/osbq-ctl.1 @ONLY)
osbq_gzip_file(${OSBQ_INSTALL_STAGING}/osbq-ctl.1 osbq-ctl.1)
osbq_gzip_file(${PROJECT_SOURCE_DIR}/CHANGELOG.md changelog)
install(FILES ${OSBQ_INSTALL_STAGING}/osbq-ctl.1.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
install(FILES ctl/osbq-ctl.bash-completion DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions
        RENAME osbq-ctl)

# Documentation: the changelog, the licence in Debian's copyright format (it names
# /usr/share/common-licenses/Apache-2.0), and the pages an operator of an installed broker reads.
install(FILES ${OSBQ_INSTALL_STAGING}/changelog.gz deploy/debian/copyright README.md
              docs/deploy.md docs/ctl.md docs/security.md docs/metrics.md docs/backends.md
        DESTINATION ${CMAKE_INSTALL_DOCDIR})
