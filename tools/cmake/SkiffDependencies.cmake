# Third-party packages, all from Debian (tools/setup installs them). Nothing is
# downloaded at configure time and no third-party source lives in the repo.
find_package(Threads REQUIRED)
# TLS (the server's wss:// port, the clients, peer links) and token
# signatures.
find_package(OpenSSL 3 REQUIRED)
find_package(nlohmann_json 3.10 CONFIG REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(PQXX REQUIRED IMPORTED_TARGET libpqxx)
pkg_check_modules(SODIUM REQUIRED IMPORTED_TARGET libsodium)
# io_uring for the server's batched sends (src/server/internal/send_ring.cc);
# without it the server sends with sendmsg, as it does where the kernel
# refuses io_uring.
pkg_check_modules(URING IMPORTED_TARGET GLOBAL liburing)
# Header-only: the geo index's R-tree (Boost.Geometry).
find_package(Boost 1.74 REQUIRED)
# The document cache's hash map (Abseil's flat_hash_map).
find_package(absl CONFIG REQUIRED)
if(SKIFF_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(SKIFF_BUILD_BENCH OR SKIFF_BUILD_TESTS)
  find_package(benchmark CONFIG REQUIRED)
endif()
# The geo benchmark's peer clients: hiredis for Redis, msgpuck (a static
# library) for Tarantool's IPROTO.
if(SKIFF_BUILD_BENCH)
  pkg_check_modules(HIREDIS REQUIRED IMPORTED_TARGET hiredis)
  find_path(MSGPUCK_INCLUDE_DIR msgpuck.h REQUIRED)
  find_library(MSGPUCK_LIBRARY NAMES libmsgpuck.a msgpuck REQUIRED)
  add_library(skiff_msgpuck INTERFACE)
  add_library(skiff::msgpuck ALIAS skiff_msgpuck)
  target_include_directories(skiff_msgpuck SYSTEM INTERFACE "${MSGPUCK_INCLUDE_DIR}")
  target_link_libraries(skiff_msgpuck INTERFACE "${MSGPUCK_LIBRARY}")
endif()

# Standalone Asio is header-only; skiff::asio carries its include directory
# and the definition that selects the standalone flavour.
find_path(SKIFF_ASIO_INCLUDE_DIR asio.hpp REQUIRED)
if(NOT TARGET skiff_asio)
  add_library(skiff_asio INTERFACE)
  add_library(skiff::asio ALIAS skiff_asio)
  target_include_directories(skiff_asio SYSTEM INTERFACE "${SKIFF_ASIO_INCLUDE_DIR}")
  target_compile_definitions(skiff_asio INTERFACE ASIO_STANDALONE)
  target_link_libraries(skiff_asio INTERFACE Threads::Threads)
endif()
