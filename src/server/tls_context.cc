#include "server/tls_context.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <utility>

#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>

namespace skiff::server {
namespace {

// The newest OpenSSL error as text ("" when none), clearing the queue so
// it cannot be mistaken for a later call's.
std::string TakeOpenSslError() {
  unsigned long code = 0;
  unsigned long last = 0;
  while ((code = ERR_get_error()) != 0) last = code;
  if (last == 0) return "";
  char text[256];
  ERR_error_string_n(last, text, sizeof text);
  return text;
}

std::string Because(const std::string& why) { return why.empty() ? "" : " (" + why + ")"; }

// Opens and closes `path` so a missing or unreadable file is named as such
// rather than as a parse failure.
Status CheckReadable(const char* flag, const std::string& path) {
  if (path.empty()) return BadRequest(std::string(flag) + " names no file");
  std::FILE* f = std::fopen(path.c_str(), "r");
  if (f == nullptr) {
    return BadRequest(std::string("cannot read ") + flag + " " + path + ": " +
                      std::strerror(errno));
  }
  std::fclose(f);
  return Status::Ok();
}

std::string TimeText(const ASN1_TIME* t) {
  BIO* out = BIO_new(BIO_s_mem());
  if (out == nullptr) return "?";
  ASN1_TIME_print(out, t);
  char* data = nullptr;
  const long n = BIO_get_mem_data(out, &data);
  std::string text(data, n > 0 ? static_cast<size_t>(n) : 0);
  BIO_free(out);
  return text;
}

std::string SubjectText(X509* cert) {
  char name[256];
  X509_NAME_oneline(X509_get_subject_name(cert), name, sizeof name);
  return name;
}

// Never asks for a passphrase: OpenSSL's default would read one from the
// terminal, and block a SIGHUP reload (and the stop after it) for good.
int NoPassphrase(char*, int, int, void*) { return -1; }

// OpenSSL's socket BIO writes with write(2), which raises SIGPIPE on a
// connection its peer reset; this one sends with MSG_NOSIGNAL, as the
// plain path does, and borrows everything else from the socket BIO.
int SendWithoutSignal(BIO* bio, const char* data, int size) {
  const int fd = static_cast<int>(BIO_get_fd(bio, nullptr));
  BIO_clear_retry_flags(bio);
  const ssize_t n = ::send(fd, data, static_cast<size_t>(size), MSG_NOSIGNAL);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
    BIO_set_retry_write(bio);
  }
  return static_cast<int>(n);
}

const BIO_METHOD* SocketWithoutSignal() {
  static BIO_METHOD* const method = [] {
    const BIO_METHOD* socket = BIO_s_socket();
    BIO_METHOD* m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR,
                                 "socket without SIGPIPE");
    BIO_meth_set_write(m, SendWithoutSignal);
    BIO_meth_set_read(m, BIO_meth_get_read(socket));
    BIO_meth_set_puts(m, BIO_meth_get_puts(socket));
    BIO_meth_set_ctrl(m, BIO_meth_get_ctrl(socket));
    BIO_meth_set_create(m, BIO_meth_get_create(socket));
    BIO_meth_set_destroy(m, BIO_meth_get_destroy(socket));
    return m;
  }();
  return method;
}

// A new SSL_CTX serving the pair, or why it cannot; *description names it.
Result<SSL_CTX*> Build(const TlsSettings& s, std::string* description) {
  if (Status st = CheckReadable("--tls-cert", s.cert_file); !st.ok()) return st;
  if (Status st = CheckReadable("--tls-key", s.key_file); !st.ok()) return st;
  ERR_clear_error();
  SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
  if (ctx == nullptr) return Internal("cannot make a TLS context" + Because(TakeOpenSslError()));
  auto fail = [ctx](std::string why) -> Result<SSL_CTX*> {
    SSL_CTX_free(ctx);
    return BadRequest(std::move(why));
  };
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // Renegotiation would let a client make the server redo a handshake's
  // work at will; TLS 1.3 has none anyway.
  SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  // The connection retries a short write with the same bytes from where
  // its queue stands, which may have moved (a chunk freed and re-made).
  long mode = SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER;
  if (s.release_buffers) mode |= SSL_MODE_RELEASE_BUFFERS;
  SSL_CTX_set_mode(ctx, mode);
  // Reads take whatever the socket holds, not a record at a time: fewer
  // system calls per request.
  SSL_CTX_set_read_ahead(ctx, 1);
  // No server-side session cache: it would keep every session (up to 20k
  // by default) in memory and sweep them under a lock. A client resumes
  // with the ticket it was given, which carries its session itself; one
  // ticket per connection, not OpenSSL's two, is enough for that.
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
  SSL_CTX_set_num_tickets(ctx, 1);

  SSL_CTX_set_default_passwd_cb(ctx, NoPassphrase);
  if (SSL_CTX_use_certificate_chain_file(ctx, s.cert_file.c_str()) != 1) {
    return fail("--tls-cert " + s.cert_file + " holds no usable PEM certificate" +
                Because(TakeOpenSslError()));
  }
  // The key is read on its own first, so that a file with no key and a key
  // of another certificate get different words.
  EVP_PKEY* key = nullptr;
  if (BIO* in = BIO_new_file(s.key_file.c_str(), "r"); in != nullptr) {
    key = PEM_read_bio_PrivateKey(in, nullptr, NoPassphrase, nullptr);
    BIO_free(in);
  }
  if (key == nullptr && ERR_GET_REASON(ERR_peek_last_error()) == PEM_R_BAD_PASSWORD_READ) {
    TakeOpenSslError();
    return fail("--tls-key " + s.key_file + " is encrypted; skiffd takes an unencrypted key");
  }
  if (key == nullptr) {
    return fail("--tls-key " + s.key_file + " holds no usable PEM private key" +
                Because(TakeOpenSslError()));
  }
  const bool matches = SSL_CTX_use_PrivateKey(ctx, key) == 1 && SSL_CTX_check_private_key(ctx) == 1;
  EVP_PKEY_free(key);
  if (!matches) {
    TakeOpenSslError();
    return fail("--tls-key " + s.key_file + " does not match the certificate in --tls-cert " +
                s.cert_file);
  }
  X509* leaf = SSL_CTX_get0_certificate(ctx);
  if (X509_cmp_current_time(X509_get0_notAfter(leaf)) <= 0) {
    return fail("the certificate in --tls-cert " + s.cert_file + " (" + SubjectText(leaf) +
                ") expired on " + TimeText(X509_get0_notAfter(leaf)));
  }
  if (X509_cmp_current_time(X509_get0_notBefore(leaf)) >= 0) {
    return fail("the certificate in --tls-cert " + s.cert_file + " (" + SubjectText(leaf) +
                ") is not valid before " + TimeText(X509_get0_notBefore(leaf)));
  }
  *description = SubjectText(leaf) + ", expires " + TimeText(X509_get0_notAfter(leaf));
  return ctx;
}

}  // namespace

Result<std::unique_ptr<TlsContext>> TlsContext::Load(const TlsSettings& settings) {
  std::string description;
  Result<SSL_CTX*> ctx = Build(settings, &description);
  if (!ctx.ok()) return ctx.status();
  return std::unique_ptr<TlsContext>(new TlsContext(settings, ctx.value(), description));
}

TlsContext::TlsContext(TlsSettings settings, SSL_CTX* ctx, std::string description)
    : settings_(std::move(settings)), ctx_(ctx), description_(std::move(description)) {}

TlsContext::~TlsContext() { SSL_CTX_free(ctx_); }

Status TlsContext::Reload() {
  std::string description;
  Result<SSL_CTX*> ctx = Build(settings_, &description);
  if (!ctx.ok()) return ctx.status();
  SSL_CTX* old = nullptr;
  {
    MutexLock lock(&mu_);
    old = ctx_;
    ctx_ = ctx.value();
    description_ = std::move(description);
  }
  SSL_CTX_free(old);  // sessions made with it hold their own reference
  return Status::Ok();
}

SSL* TlsContext::NewSession(int fd) const {
  SSL* ssl = nullptr;
  {
    MutexLock lock(&mu_);
    ssl = SSL_new(ctx_);
  }
  if (ssl == nullptr) return nullptr;
  BIO* socket = BIO_new(SocketWithoutSignal());
  if (socket == nullptr) {
    SSL_free(ssl);
    return nullptr;
  }
  BIO_set_fd(socket, fd, BIO_NOCLOSE);  // the connection closes its socket itself
  SSL_set_bio(ssl, socket, socket);
  SSL_set_accept_state(ssl);
  return ssl;
}

std::string TlsContext::Describe() const {
  MutexLock lock(&mu_);
  return description_;
}

}  // namespace skiff::server
