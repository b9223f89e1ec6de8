// OpenSSL for Swift: the headers, plus functions for the macros that do not import.
#ifndef C_OPENSSL_SHIM_H
#define C_OPENSSL_SHIM_H

#include <openssl/ssl.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <openssl/sha.h>
#include <openssl/pem.h>
#include <openssl/evp.h>
#include <openssl/ec.h>
#include <openssl/bn.h>
#include <openssl/rand.h>
#include <openssl/ecdsa.h>

static inline long cos_ctx_set_min_tls12(SSL_CTX *ctx) { return SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION); }
/* SSL_MODE_RELEASE_BUFFERS: an idle session (a pooled upstream connection, a quiet tunnel) holds no
 * record buffers (about 17 KiB each way). Keeping them saves the two mallocs of a request (callgrind: 4%
 * of the proxy's instructions) but not a measurable share of its CPU, most of which is the kernel's; nor
 * did read-ahead (one BIO read per record instead of two: 0.7% of the instructions). */
static inline long cos_ctx_set_modes(SSL_CTX *ctx) {
    return SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER | SSL_MODE_RELEASE_BUFFERS);
}
static inline uint64_t cos_ctx_set_options(SSL_CTX *ctx) {
    return SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
}
static inline long cos_ctx_set_client_session_cache(SSL_CTX *ctx) {
    return SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
}
static inline long cos_set_sni(SSL *ssl, const char *name) { return SSL_set_tlsext_host_name(ssl, name); }
// The local CA (Intercept/): keys, certificates and server contexts made in memory.
static inline EVP_PKEY *cos_generate_p256_key(void) { return EVP_EC_gen("P-256"); }
static inline long cos_bio_mem_data(BIO *bio, const char **data) {
    char *pointer = NULL;
    long length = BIO_get_mem_data(bio, &pointer);
    *data = pointer;
    return length;
}
static inline long cos_ctx_add1_chain_cert(SSL_CTX *ctx, X509 *certificate) { return SSL_CTX_add1_chain_cert(ctx, certificate); }
static inline long cos_ctx_use_server_session_cache(SSL_CTX *ctx, long size) {
    SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_SERVER);
    return SSL_CTX_sess_set_cache_size(ctx, size);
}
static inline int cos_subtrees_count(const STACK_OF(GENERAL_SUBTREE) *subtrees) { return sk_GENERAL_SUBTREE_num(subtrees); }
static inline GENERAL_SUBTREE *cos_subtree_at(const STACK_OF(GENERAL_SUBTREE) *subtrees, int index) {
    return sk_GENERAL_SUBTREE_value(subtrees, index);
}
static const int COS_MBSTRING_UTF8 = MBSTRING_UTF8;

static inline unsigned long cos_error_reason(unsigned long error) { return ERR_GET_REASON(error); }
/* A server picks from its own order of TLS 1.3 ciphersuites, not the client's. */
static inline uint64_t cos_ctx_prefer_server_ciphers(SSL_CTX *ctx) { return SSL_CTX_set_options(ctx, SSL_OP_CIPHER_SERVER_PREFERENCE); }
/* A BIO over the stream connection's buffers: "no bytes yet, ask again" and its reset. */
static inline void cos_bio_set_retry_read(BIO *bio) { BIO_set_retry_read(bio); }
static inline void cos_bio_clear_retry_flags(BIO *bio) { BIO_clear_retry_flags(bio); }
/* The last SSL_read stopped for want of the peer's bytes (SSL_want_read, a macro): no error queue read. */
static inline int cos_ssl_wants_read(const SSL *ssl) { return SSL_want(ssl) == SSL_READING; }

static const int COS_SSL_ERROR_NONE = SSL_ERROR_NONE;
static const int COS_SSL_ERROR_SSL = SSL_ERROR_SSL;
static const int COS_SSL_ERROR_WANT_READ = SSL_ERROR_WANT_READ;
static const int COS_SSL_ERROR_WANT_WRITE = SSL_ERROR_WANT_WRITE;
static const int COS_SSL_ERROR_SYSCALL = SSL_ERROR_SYSCALL;
static const int COS_SSL_ERROR_ZERO_RETURN = SSL_ERROR_ZERO_RETURN;
static const int COS_SSL_VERIFY_NONE = SSL_VERIFY_NONE;
static const int COS_SSL_VERIFY_PEER = SSL_VERIFY_PEER;
static const int COS_SSL_FILETYPE_PEM = SSL_FILETYPE_PEM;
static const int COS_BIO_TYPE_SOURCE_SINK = BIO_TYPE_SOURCE_SINK;
static const int COS_BIO_CTRL_FLUSH = BIO_CTRL_FLUSH;

static const long COS_X509_V_OK = X509_V_OK;
static const long COS_X509_V_ERR_HOSTNAME_MISMATCH = X509_V_ERR_HOSTNAME_MISMATCH;
static const long COS_X509_V_ERR_IP_ADDRESS_MISMATCH = X509_V_ERR_IP_ADDRESS_MISMATCH;
static const long COS_X509_V_ERR_CERT_HAS_EXPIRED = X509_V_ERR_CERT_HAS_EXPIRED;
static const long COS_X509_V_ERR_CERT_NOT_YET_VALID = X509_V_ERR_CERT_NOT_YET_VALID;
static const long COS_X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT = X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT;
static const long COS_X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN = X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN;
static const long COS_X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY = X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY;
static const long COS_X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE = X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE;

static const int COS_SSL_R_UNSUPPORTED_PROTOCOL = SSL_R_UNSUPPORTED_PROTOCOL;
static const int COS_SSL_R_TLSV1_ALERT_PROTOCOL_VERSION = SSL_R_TLSV1_ALERT_PROTOCOL_VERSION;
static const int COS_SSL_R_WRONG_VERSION_NUMBER = SSL_R_WRONG_VERSION_NUMBER;
static const int COS_SSL_R_CERTIFICATE_VERIFY_FAILED = SSL_R_CERTIFICATE_VERIFY_FAILED;
static const int COS_SSL_R_NO_PROTOCOLS_AVAILABLE = SSL_R_NO_PROTOCOLS_AVAILABLE;
static const int COS_SSL_R_HTTP_REQUEST = SSL_R_HTTP_REQUEST;
static const int COS_SSL_R_HTTPS_PROXY_REQUEST = SSL_R_HTTPS_PROXY_REQUEST;
static const int COS_SSL_R_NO_SHARED_CIPHER = SSL_R_NO_SHARED_CIPHER;
static const int COS_SSL_R_UNEXPECTED_EOF_WHILE_READING = SSL_R_UNEXPECTED_EOF_WHILE_READING;
/* Alerts a client sends when it refuses the server's certificate. */
static const int COS_SSL_R_TLSV1_ALERT_UNKNOWN_CA = SSL_R_TLSV1_ALERT_UNKNOWN_CA;
static const int COS_SSL_R_SSLV3_ALERT_BAD_CERTIFICATE = SSL_R_SSLV3_ALERT_BAD_CERTIFICATE;
static const int COS_SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN = SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN;
static const int COS_SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE = SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE;
static const int COS_SSL_R_TLSV1_ALERT_ACCESS_DENIED = SSL_R_TLSV1_ALERT_ACCESS_DENIED;

/* ES256 on the data path (DPoP proofs, one per request): ECDSA over the key's EC_KEY, with no
   EVP context made and initialised per signature. OpenSSL 3 deprecates these functions but keeps
   them; the wrappers keep the warnings here. */
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
static inline EC_KEY *cos_pkey_get1_ec_key(EVP_PKEY *key) { return EVP_PKEY_get1_EC_KEY(key); }
static inline void cos_ec_key_free(EC_KEY *key) { EC_KEY_free(key); }
static inline ECDSA_SIG *cos_ecdsa_do_sign(const unsigned char *digest, int length, EC_KEY *key) {
    return ECDSA_do_sign(digest, length, key);
}
/* SHA-256 over a context on the stack: SHA256() in OpenSSL 3 fetches the digest by name and makes,
   initialises and frees an EVP context per call, several times the cost of hashing a DPoP proof. */
static inline void cos_sha256(const void *data, size_t length, unsigned char *digest) {
    SHA256_CTX context;
    SHA256_Init(&context);
    SHA256_Update(&context, data, length);
    SHA256_Final(digest, &context);
}
#pragma clang diagnostic pop

#endif
