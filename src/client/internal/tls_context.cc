#include "client/internal/tls_context.h"

#include <cstdint>

#include <openssl/err.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

namespace skiff::client::internal {
namespace {

// OpenSSL's description of the oldest error on this thread's queue, which
// it then clears so that no later call reads a stale one.
std::string TakeOpenSslError() {
  const unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char text[256];
  ERR_error_string_n(code, text, sizeof(text));
  return text;
}

// A fatal alert from the server is the only word a client gets on why the
// server gave up (no shared protocol version, no shared cipher...), and
// Asio keeps only "handshake failed". The context serves one connection, so
// a slot of its own holds the last alert's code, plus one (0: none). Not the
// app data: Asio keeps its verify callback there.
int AlertSlot() {
  static const int slot = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return slot;
}

void RecordAlert(const SSL* ssl, int where, int ret) {
  if ((where & SSL_CB_READ_ALERT) == 0 || (ret >> 8) != SSL3_AL_FATAL) return;
  SSL_CTX_set_ex_data(SSL_get_SSL_CTX(ssl), AlertSlot(),
                      reinterpret_cast<void*>(static_cast<uintptr_t>((ret & 0xff) + 1)));
}

}  // namespace

Status ConfigureClientTls(SSL_CTX* ctx, const std::string& host, const TransportTls& tls) {
  if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1) {
    return Internal("cannot require TLS 1.2: " + TakeOpenSslError());
  }
  if (AlertSlot() < 0 || SSL_CTX_set_ex_data(ctx, AlertSlot(), nullptr) != 1) {
    return Internal("cannot attach to the TLS context: " + TakeOpenSslError());
  }
  SSL_CTX_set_info_callback(ctx, RecordAlert);
  if (tls.insecure) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, nullptr);
    return Status::Ok();
  }
  if (tls.ca_file.empty()) {
    if (SSL_CTX_set_default_verify_paths(ctx) != 1) {
      return Internal("cannot read the system's CA store: " + TakeOpenSslError());
    }
  } else if (SSL_CTX_load_verify_file(ctx, tls.ca_file.c_str()) != 1) {
    return BadRequest("cannot load the CA file '" + tls.ca_file + "': " + TakeOpenSslError());
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  // An IP literal is checked against the certificate's IP address SANs, a
  // name against its DNS SANs; set1_ip_asc tells the two apart.
  X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
  if (X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) != 1) {
    ERR_clear_error();
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size()) != 1) {
      return Internal("cannot check the server's name against '" + host +
                      "': " + TakeOpenSslError());
    }
  }
  return Status::Ok();
}

std::string TlsFailureReason(const SSL* ssl) {
  if (ssl == nullptr) return "";
  if (SSL_get_verify_mode(ssl) != SSL_VERIFY_NONE) {
    const long verified = SSL_get_verify_result(ssl);
    if (verified != X509_V_OK) {
      return std::string("certificate verify failed: ") + X509_verify_cert_error_string(verified);
    }
  }
  const auto alert =
      reinterpret_cast<uintptr_t>(SSL_CTX_get_ex_data(SSL_get_SSL_CTX(ssl), AlertSlot()));
  if (alert != 0) {
    return std::string("the server refused the TLS handshake: ") +
           SSL_alert_desc_string_long(static_cast<int>(alert - 1));
  }
  return "";
}

}  // namespace skiff::client::internal
