# skiff::websocketpp: websocketpp 0.8.2 (Debian) on standalone Asio, usable
# from C++20, for the client SDK (the server has its own connection layer on
# Asio, src/ws and src/server/internal/socket_connection.h).
#
# g++ 12 in C++20 mode rejects the template-id spelling websocketpp uses for
# a few constructors and destructors, and its UTF-8 check of received text
# frames walks a table for every byte, ASCII included. The changes are
# patches you can read, tools/cmake/websocketpp/*.patch, applied at configure
# time to copies of the headers they touch, which go first on the include
# path. Nothing third-party is stored in the repo, and configure
# stops if the patch does not apply (another websocketpp version).
include_guard(GLOBAL)

find_package(Threads REQUIRED)
find_path(SKIFF_WEBSOCKETPP_INCLUDE_DIR websocketpp/endpoint.hpp REQUIRED)
find_path(SKIFF_ASIO_INCLUDE_DIR asio.hpp REQUIRED)
find_program(SKIFF_PATCH patch REQUIRED)

set(_skiff_wspp_patches "${PROJECT_SOURCE_DIR}/tools/cmake/websocketpp")
set(SKIFF_WEBSOCKETPP_PATCHES "${_skiff_wspp_patches}/cxx20-constructor-names.patch"
                              "${_skiff_wspp_patches}/utf8-ascii-fast-path.patch")
set(SKIFF_WEBSOCKETPP_PATCHED_HEADERS endpoint.hpp logger/basic.hpp utf8_validator.hpp)
set(_skiff_wspp_out "${PROJECT_BINARY_DIR}/generated/websocketpp_cxx20")
set(_skiff_wspp_work "${PROJECT_BINARY_DIR}/generated/websocketpp_cxx20.work")
file(REMOVE_RECURSE "${_skiff_wspp_work}")
foreach(_header IN LISTS SKIFF_WEBSOCKETPP_PATCHED_HEADERS)
  set(_src "${SKIFF_WEBSOCKETPP_INCLUDE_DIR}/websocketpp/${_header}")
  # Re-run configure when the installed header or the patch changes.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_src}")
  get_filename_component(_dir "${_skiff_wspp_work}/websocketpp/${_header}" DIRECTORY)
  file(COPY "${_src}" DESTINATION "${_dir}")
endforeach()
foreach(_patch IN LISTS SKIFF_WEBSOCKETPP_PATCHES)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_patch}")
  execute_process(COMMAND "${SKIFF_PATCH}" --batch --forward --silent -p1 -d "${_skiff_wspp_work}"
                          -i "${_patch}"
                  RESULT_VARIABLE _patched OUTPUT_VARIABLE _patch_out ERROR_VARIABLE _patch_out)
  if(NOT _patched EQUAL 0)
    message(FATAL_ERROR "websocketpp: ${_patch} does not apply to the headers in "
                        "${SKIFF_WEBSOCKETPP_INCLUDE_DIR} (is this websocketpp 0.8.2?):\n${_patch_out}")
  endif()
endforeach()
# Only changed files are rewritten, so a re-configure rebuilds nothing.
foreach(_header IN LISTS SKIFF_WEBSOCKETPP_PATCHED_HEADERS)
  get_filename_component(_dir "${_skiff_wspp_out}/websocketpp/${_header}" DIRECTORY)
  file(MAKE_DIRECTORY "${_dir}")
  file(COPY_FILE "${_skiff_wspp_work}/websocketpp/${_header}"
       "${_skiff_wspp_out}/websocketpp/${_header}" ONLY_IF_DIFFERENT)
endforeach()
file(REMOVE_RECURSE "${_skiff_wspp_work}")
set(SKIFF_WEBSOCKETPP_PATCHED_DIR "${_skiff_wspp_out}" CACHE INTERNAL "patched websocketpp headers")

if(NOT TARGET skiff_websocketpp)
  add_library(skiff_websocketpp INTERFACE)
  add_library(skiff::websocketpp ALIAS skiff_websocketpp)
  # SYSTEM keeps the library's own warnings out of our -Wall output; the
  # patched copies come before the installed headers they replace.
  target_include_directories(skiff_websocketpp SYSTEM BEFORE INTERFACE "${_skiff_wspp_out}"
                                                                       "${SKIFF_ASIO_INCLUDE_DIR}")
  target_compile_definitions(skiff_websocketpp INTERFACE ASIO_STANDALONE)
  target_link_libraries(skiff_websocketpp INTERFACE Threads::Threads)
endif()
