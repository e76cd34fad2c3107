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
set(_read_end_old "    }\n\n    read_frame();\n}\n")
set(_read_error_old "            log_err(log::elevel::rerror, \"consume\", consume_ec);\n")
string(FIND "${_text}" "${_read_end_old}" _read_end)
string(FIND "${_text}" "${_read_error_old}" _read_error)
if(_at EQUAL -1 OR _loop EQUAL -1 OR _read_end EQUAL -1 OR _read_error EQUAL -1)
  message(FATAL_ERROR "websocketpp/impl/connection_impl.hpp: write_frame is not the 0.8.2 one")
endif()
# handle_read_frame also tells the connection when it has dispatched every
# message of one read, before it reads again: the server sends all the
# replies of that read as one write then, with no handler posted for it.
# The hook is a member of config::connection_base that only our server's
# config defines; for any other config the call resolves to nothing.
string(REPLACE "${_read_end_old}" "    }\n\n    skiff_after_read(static_cast<typename config::connection_base&>(*this), 0);\n    read_frame();\n}\n"
       _text "${_text}")
string(REPLACE "${_read_error_old}" "${_read_error_old}            skiff_after_read(static_cast<typename config::connection_base&>(*this), 0);\n"
       _text "${_text}")
string(REPLACE "namespace websocketpp {\n" "namespace websocketpp {\n
template <typename base>
auto skiff_after_read(base & b, int) -> decltype(b.skiff_after_read(), void()) {
    b.skiff_after_read();
}
template <typename base>
void skiff_after_read(base &, long) {}
" _text "${_text}")
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

# And one for the read side: websocketpp unmasks each incoming payload one
# byte at a time (its own "TODO: SIMD masking") and runs every byte of a text
# frame through its UTF-8 state machine, which together made the frame
# parser the server's hottest function. The patched processor unmasks eight
# bytes per step and skips the state machine for a chunk that is all ASCII
# while no multi-byte sequence is open; anything else is still validated by
# the library's own code, so what is accepted does not change.
set(_src "${SKIFF_WEBSOCKETPP_INCLUDE_DIR}/websocketpp/processors/hybi13.hpp")
set(_dst "${_skiff_wspp_out}/websocketpp/processors/hybi13.hpp")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_src}")
file(READ "${_src}" _text)
set(_unmask_old "            m_current_msg->prepared_key = frame::byte_mask_circ(
                buf, len, m_current_msg->prepared_key);")
set(_utf8_old "            if (!m_current_msg->validator.decode(out.begin()+offset,out.end())) {")
set(_class_old "template <typename config>
class hybi13 : public processor<config> {")
foreach(_needle IN ITEMS "${_unmask_old}" "${_utf8_old}" "${_class_old}")
  string(FIND "${_text}" "${_needle}" _at)
  if(_at EQUAL -1)
    message(FATAL_ERROR "websocketpp/processors/hybi13.hpp is not the 0.8.2 one")
  endif()
endforeach()
string(REPLACE "${_class_old}" "// Unmasks `len` bytes in place with a prepared key (the 4-byte key repeated
// over a size_t, rotated to the current offset) and returns the key rotated
// past them, as frame::byte_mask_circ does one byte at a time.
inline size_t skiff_unmask(uint8_t * data, size_t len, size_t prepared_key) {
    size_t i = 0;
    for (; i + sizeof(size_t) <= len; i += sizeof(size_t)) {
        size_t word;
        std::memcpy(&word, data + i, sizeof word);
        word ^= prepared_key;
        std::memcpy(data + i, &word, sizeof word);
    }
    // A whole number of words leaves the key where it was.
    return frame::byte_mask_circ(data + i, len - i, prepared_key);
}

// True when none of the `len` bytes has its high bit set.
inline bool skiff_all_ascii(char const * data, size_t len) {
    size_t i = 0;
    uint64_t any = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t word;
        std::memcpy(&word, data + i, sizeof word);
        any |= word;
    }
    for (; i < len; ++i) any |= static_cast<unsigned char>(data[i]);
    return (any & UINT64_C(0x8080808080808080)) == 0;
}

${_class_old}" _text "${_text}")
string(REPLACE "${_unmask_old}" "            m_current_msg->prepared_key = skiff_unmask(
                buf, len, m_current_msg->prepared_key);" _text "${_text}")
string(REPLACE "${_utf8_old}" "            if (!(m_current_msg->validator.complete() &&
                  skiff_all_ascii(out.data() + offset, out.size() - offset)) &&
                !m_current_msg->validator.decode(out.begin()+offset,out.end())) {" _text "${_text}")
file(WRITE "${_dst}.tmp" "#include <cstring>\n${_text}")
file(COPY_FILE "${_dst}.tmp" "${_dst}" ONLY_IF_DIFFERENT)
file(REMOVE "${_dst}.tmp")

# And the transport: websocketpp posts every write (and every other task it
# hands itself) to the connection's strand even when it is already running
# in that strand, so a reply sent while a read is handled waited for another
# turn of the event loop (an epoll_wait) before its sendmsg, after the next
# read had been started. Dispatching runs it at once when already in the
# strand and posts it otherwise, so the order of work is unchanged; Asio
# never completes an operation inside its initiation, so nothing recurses.
set(_src "${SKIFF_WEBSOCKETPP_INCLUDE_DIR}/websocketpp/transport/asio/connection.hpp")
set(_dst "${_skiff_wspp_out}/websocketpp/transport/asio/connection.hpp")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_src}")
file(READ "${_src}" _text)
set(_dispatch_old "    lib::error_code dispatch(dispatch_handler handler) {
        if (config::enable_multithreading) {
            m_io_service->post(m_strand->wrap(handler));")
string(FIND "${_text}" "${_dispatch_old}" _at)
if(_at EQUAL -1)
  message(FATAL_ERROR "websocketpp/transport/asio/connection.hpp is not the 0.8.2 one")
endif()
string(REPLACE "${_dispatch_old}" "    lib::error_code dispatch(dispatch_handler handler) {
        if (config::enable_multithreading) {
            m_strand->dispatch(handler);" _text "${_text}")
file(WRITE "${_dst}.tmp" "${_text}")
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
