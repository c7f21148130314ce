# Every dependency is a Debian package found through pkg-config as an imported target.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
pkg_check_modules(MHD REQUIRED IMPORTED_TARGET libmicrohttpd>=0.9.71)
# The gateway's HTTPS credentials are GnuTLS objects handed to libmicrohttpd's sessions.
pkg_check_modules(GNUTLS REQUIRED IMPORTED_TARGET gnutls>=3.6)
pkg_check_modules(JANSSON REQUIRED IMPORTED_TARGET jansson>=2.13)
pkg_check_modules(HIREDIS REQUIRED IMPORTED_TARGET hiredis>=0.14)
pkg_check_modules(CZMQ REQUIRED IMPORTED_TARGET libczmq>=4.2)
pkg_check_modules(ZMQ REQUIRED IMPORTED_TARGET libzmq>=4.3)
pkg_check_modules(MSGPACK REQUIRED IMPORTED_TARGET msgpack>=3.0)
pkg_check_modules(SODIUM REQUIRED IMPORTED_TARGET libsodium>=1.0.18)
pkg_check_modules(CURL REQUIRED IMPORTED_TARGET libcurl>=7.62)
# Plan schemas: the "pattern" keyword (schema/schema_keywords.c).
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8>=10.34)
if(OSBQ_BUILD_TESTS)
  pkg_check_modules(CMOCKA REQUIRED IMPORTED_TARGET cmocka>=1.1)
endif()
