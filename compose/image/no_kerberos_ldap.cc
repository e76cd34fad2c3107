// Kerberos (GSSAPI) and LDAP for the container image's static libpq: every
// function libpq calls, each reporting "not available".
//
// Debian builds libpq with both, and neither has a static library in Debian,
// so linking libpq.a would mean shipping libgssapi_krb5 and libldap with
// GnuTLS and their dependencies as 19 shared libraries, 8.8 MB: the image
// would grow from 12.0 to 20.8 MB. What the image gives up is what these
// answers make libpq say:
//   - gssencmode=prefer (the default) finds no credentials and goes on
//     without GSSAPI encryption; gssencmode=require fails with libpq's
//     "GSSAPI encryption required but was impossible";
//   - a server asking for GSSAPI authentication gets "GSSAPI name import
//     error" and the connection fails;
//   - an "ldap://" line in a pg_service.conf fails with "could not create
//     LDAP structure".
// Passwords, SCRAM and TLS are untouched.
//
// The declarations come from the libraries' own headers (libkrb5-dev,
// libldap-dev), so a signature that drifts is a compile error here rather
// than a crash. Functions reached only after a success that never happens
// still answer with an error, never by aborting.
#include <gssapi/gssapi.h>

#define LDAP_DEPRECATED 1  // libpq uses ldap_init and the other classic calls
#include <ldap.h>

namespace {

// The routine error for "the mechanism is not available" (RFC 2744 5.x).
constexpr OM_uint32 kUnavailable = GSS_S_UNAVAILABLE;

OM_uint32 Fail(OM_uint32* minor_status) {
  if (minor_status != nullptr) *minor_status = 0;
  return kUnavailable;
}

OM_uint32 Released(OM_uint32* minor_status) {
  if (minor_status != nullptr) *minor_status = 0;
  return GSS_S_COMPLETE;
}

char kLdapUnavailable[] = "LDAP is not available in this build of libpq";

}  // namespace

extern "C" {

gss_OID GSS_C_NT_HOSTBASED_SERVICE = GSS_C_NO_OID;

OM_uint32 gss_acquire_cred(OM_uint32* minor_status, gss_name_t, OM_uint32, gss_OID_set,
                           gss_cred_usage_t, gss_cred_id_t* output_cred_handle,
                           gss_OID_set* actual_mechs, OM_uint32* time_rec) {
  if (output_cred_handle != nullptr) *output_cred_handle = GSS_C_NO_CREDENTIAL;
  if (actual_mechs != nullptr) *actual_mechs = GSS_C_NO_OID_SET;
  if (time_rec != nullptr) *time_rec = 0;
  return Fail(minor_status);
}

OM_uint32 gss_import_name(OM_uint32* minor_status, gss_buffer_t, gss_OID, gss_name_t* output_name) {
  if (output_name != nullptr) *output_name = GSS_C_NO_NAME;
  return Fail(minor_status);
}

OM_uint32 gss_init_sec_context(OM_uint32* minor_status, gss_cred_id_t, gss_ctx_id_t*, gss_name_t,
                               gss_OID, OM_uint32, OM_uint32, gss_channel_bindings_t, gss_buffer_t,
                               gss_OID*, gss_buffer_t output_token, OM_uint32*, OM_uint32*) {
  if (output_token != nullptr) {
    output_token->length = 0;
    output_token->value = nullptr;
  }
  return Fail(minor_status);
}

OM_uint32 gss_wrap(OM_uint32* minor_status, gss_ctx_id_t, int, gss_qop_t, gss_buffer_t, int*,
                   gss_buffer_t) {
  return Fail(minor_status);
}

OM_uint32 gss_unwrap(OM_uint32* minor_status, gss_ctx_id_t, gss_buffer_t, gss_buffer_t, int*,
                     gss_qop_t*) {
  return Fail(minor_status);
}

OM_uint32 gss_wrap_size_limit(OM_uint32* minor_status, gss_ctx_id_t, int, gss_qop_t, OM_uint32,
                              OM_uint32* max_input_size) {
  if (max_input_size != nullptr) *max_input_size = 0;
  return Fail(minor_status);
}

// libpq appends the text of each status it gets; a failure here leaves its
// own message ("GSSAPI name import error") as the whole error.
OM_uint32 gss_display_status(OM_uint32* minor_status, OM_uint32, int, gss_OID,
                             OM_uint32* message_context, gss_buffer_t) {
  if (message_context != nullptr) *message_context = 0;
  if (minor_status != nullptr) *minor_status = 0;
  return GSS_S_FAILURE;
}

OM_uint32 gss_release_buffer(OM_uint32* minor_status, gss_buffer_t buffer) {
  if (buffer != nullptr) {
    buffer->length = 0;
    buffer->value = nullptr;
  }
  return Released(minor_status);
}

OM_uint32 gss_release_cred(OM_uint32* minor_status, gss_cred_id_t* cred_handle) {
  if (cred_handle != nullptr) *cred_handle = GSS_C_NO_CREDENTIAL;
  return Released(minor_status);
}

OM_uint32 gss_release_name(OM_uint32* minor_status, gss_name_t* name) {
  if (name != nullptr) *name = GSS_C_NO_NAME;
  return Released(minor_status);
}

OM_uint32 gss_delete_sec_context(OM_uint32* minor_status, gss_ctx_id_t* context_handle,
                                 gss_buffer_t output_token) {
  if (context_handle != nullptr) *context_handle = GSS_C_NO_CONTEXT;
  return gss_release_buffer(minor_status, output_token);
}

// libpq gives up on LDAP when ldap_init returns null; the rest is never
// reached and fails if it is.
LDAP* ldap_init(const char*, int) { return nullptr; }
int ldap_set_option(LDAP*, int, const void*) { return LDAP_OPT_ERROR; }
int ldap_simple_bind(LDAP*, const char*, const char*) { return -1; }
int ldap_result(LDAP*, int, int, struct timeval*, LDAPMessage** result) {
  if (result != nullptr) *result = nullptr;
  return -1;
}
int ldap_search_st(LDAP*, const char*, int, const char*, char**, int, struct timeval*,
                   LDAPMessage** result) {
  if (result != nullptr) *result = nullptr;
  return LDAP_NOT_SUPPORTED;
}
int ldap_count_entries(LDAP*, LDAPMessage*) { return -1; }
LDAPMessage* ldap_first_entry(LDAP*, LDAPMessage*) { return nullptr; }
struct berval** ldap_get_values_len(LDAP*, LDAPMessage*, const char*) {
  return nullptr;
}
void ldap_value_free_len(struct berval**) {}
int ldap_msgfree(LDAPMessage*) { return 0; }
int ldap_unbind(LDAP*) { return LDAP_SUCCESS; }
char* ldap_err2string(int) { return kLdapUnavailable; }

}  // extern "C"
