# skiff::websocketpp: websocketpp 0.8.2 (Debian) on standalone Asio, usable
# from C++20.
#
# g++ 12 in C++20 mode rejects the template-id spelling websocketpp uses for a
# few constructors and destructors (`~endpoint<connection,config>()`). Rather
# than building those translation units as C++17, we generate fixed copies of
# the four affected headers from the installed ones at configure time and put
# them first on the include path. Nothing third-party is stored in the repo.
include_guard(GLOBAL)

find_package(Threads REQUIRED)
find_path(SKIFF_WEBSOCKETPP_INCLUDE_DIR websocketpp/endpoint.hpp REQUIRED)
find_path(SKIFF_ASIO_INCLUDE_DIR asio.hpp REQUIRED)

set(_skiff_wspp_out "${PROJECT_BINARY_DIR}/generated/websocketpp_cxx20")
foreach(_header IN ITEMS endpoint.hpp logger/basic.hpp roles/server_endpoint.hpp
                         roles/client_endpoint.hpp)
  set(_src "${SKIFF_WEBSOCKETPP_INCLUDE_DIR}/websocketpp/${_header}")
  set(_dst "${_skiff_wspp_out}/websocketpp/${_header}")
  # Re-run configure when the installed header changes.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_src}")
  file(READ "${_src}" _text)
  # A constructor or destructor named with its template arguments, e.g.
  # `    ~basic<concurrency,names>() {}` or `    server<config>(server<config> &&`.
  # Only a name preceded by blanks or `~` is a declaration; a template-id used
  # as a type or base class (preceded by `(`, `:` or `,`) is left alone.
  string(REGEX REPLACE "([ \t]~?)(basic|endpoint|server|client)<[a-z_, ]+>\\(" "\\1\\2(" _fixed
                       "${_text}")
  if(_fixed STREQUAL _text AND NOT _header STREQUAL "roles/client_endpoint.hpp")
    message(WARNING "websocketpp/${_header}: nothing to patch; is this websocketpp 0.8.2?")
  endif()
  file(WRITE "${_dst}.tmp" "${_fixed}")
  file(COPY_FILE "${_dst}.tmp" "${_dst}" ONLY_IF_DIFFERENT)
  file(REMOVE "${_dst}.tmp")
endforeach()

if(NOT TARGET skiff_websocketpp)
  add_library(skiff_websocketpp INTERFACE)
  add_library(skiff::websocketpp ALIAS skiff_websocketpp)
  # SYSTEM keeps the library's own warnings out of our -Wall output; the
  # generated copies come before the installed headers they replace.
  target_include_directories(skiff_websocketpp SYSTEM BEFORE INTERFACE "${_skiff_wspp_out}"
                                                                       "${SKIFF_ASIO_INCLUDE_DIR}")
  target_compile_definitions(skiff_websocketpp INTERFACE ASIO_STANDALONE)
  target_link_libraries(skiff_websocketpp INTERFACE Threads::Threads)
endif()
