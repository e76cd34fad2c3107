# Run by ctest (see CMakeLists.txt): compiles the websocketpp client headers
# as C++20 twice, without and with the patched copies first on the path.
file(WRITE "${WORK}/client_headers.cc"
     "#include <websocketpp/config/asio_no_tls_client.hpp>\n#include <websocketpp/client.hpp>\n"
     "int main() { websocketpp::client<websocketpp::config::asio_client> c; return 0; }\n")
set(flags -std=c++20 -fsyntax-only -DASIO_STANDALONE)
# The compiler searches /usr/include itself; naming it again would break
# the standard library's #include_next.
foreach(dir IN ITEMS ${INSTALLED} ${ASIO})
  if(NOT dir STREQUAL "/usr/include")
    list(APPEND flags -isystem ${dir})
  endif()
endforeach()
execute_process(COMMAND ${CXX} ${flags} "${WORK}/client_headers.cc"
                RESULT_VARIABLE without OUTPUT_QUIET ERROR_VARIABLE without_errors)
execute_process(COMMAND ${CXX} -I${PATCHED} ${flags} "${WORK}/client_headers.cc"
                RESULT_VARIABLE with ERROR_VARIABLE with_errors)
if(without EQUAL 0)
  message(FATAL_ERROR "the installed websocketpp compiles as C++20 without the patch: drop it")
endif()
if(NOT without_errors MATCHES "template-id not allowed")
  message(FATAL_ERROR "the installed headers fail for another reason:\n${without_errors}")
endif()
if(NOT with EQUAL 0)
  message(FATAL_ERROR "the patched headers do not compile as C++20:\n${with_errors}")
endif()
message(STATUS "websocketpp: fails as C++20 without the patch, compiles with it")
