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

# One more generated copy, for speed rather than C++20: websocketpp hands Asio
# two buffers per frame (header, payload), and Asio passes at most 16 buffers
# to one writev, so 32 pipelined replies left in 4 sendmsg calls and the
# peer's reads shrank to match (PLATFORM.md measured this as what limits a
# pipelined server). The patched write_frame joins the frames of one write
# into a single buffer when there are several small ones.
set(_src "${SKIFF_WEBSOCKETPP_INCLUDE_DIR}/websocketpp/impl/connection_impl.hpp")
set(_dst "${_skiff_wspp_out}/websocketpp/impl/connection_impl.hpp")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_src}")
file(READ "${_src}" _text)
string(FIND "${_text}" "m_send_buffer.push_back(transport::buffer(payload.c_str(),payload.size()));"
       _at)
string(FIND "${_text}" "typename std::vector<message_ptr>::iterator it;\n    for (it = m_current_msgs.begin();" _loop)
if(_at EQUAL -1 OR _loop EQUAL -1)
  message(FATAL_ERROR "websocketpp/impl/connection_impl.hpp: write_frame is not the 0.8.2 one")
endif()
string(REPLACE
  "    typename std::vector<message_ptr>::iterator it;\n    for (it = m_current_msgs.begin(); it != m_current_msgs.end(); ++it) {"
  "    size_t skiff_joined_bytes = 0;
    for (size_t i = 0; i < m_current_msgs.size(); ++i) {
        skiff_joined_bytes += m_current_msgs[i]->get_header().size() +
                              m_current_msgs[i]->get_payload().size();
    }
    // Kept alive at the front of m_current_msgs until the write completes;
    // the back keeps its terminal flag.
    message_ptr skiff_joined;
    if (m_current_msgs.size() > 1 && skiff_joined_bytes <= 1048576) {
        skiff_joined = m_msg_manager->get_message(frame::opcode::binary, skiff_joined_bytes);
    }
    if (skiff_joined) {
        std::string & bytes = skiff_joined->get_raw_payload();
        bytes.clear();
        bytes.reserve(skiff_joined_bytes);
        for (size_t i = 0; i < m_current_msgs.size(); ++i) {
            bytes += m_current_msgs[i]->get_header();
            bytes += m_current_msgs[i]->get_payload();
        }
        m_send_buffer.push_back(transport::buffer(bytes.data(), bytes.size()));
        m_current_msgs.insert(m_current_msgs.begin(), skiff_joined);
    }
    typename std::vector<message_ptr>::iterator it;
    for (it = m_current_msgs.begin(); !skiff_joined && it != m_current_msgs.end(); ++it) {"
  _fixed "${_text}")
file(WRITE "${_dst}.tmp" "${_fixed}")
file(COPY_FILE "${_dst}.tmp" "${_dst}" ONLY_IF_DIFFERENT)
file(REMOVE "${_dst}.tmp")

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
