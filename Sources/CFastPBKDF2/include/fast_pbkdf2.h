#ifndef FAST_PBKDF2_H
#define FAST_PBKDF2_H

#include <stddef.h>

/// PBKDF2-HMAC-SHA1 (RFC 8018). The HMAC key pads are hashed once per call; every later iteration is two SHA-1
/// compressions continuing from those saved states, kept in registers. On x86-64 CPUs with the SHA extensions the
/// compressions use them, two output blocks interleaved; elsewhere a portable compression runs.
/// `portable` = 1 forces the portable compression (tests compare both paths on one machine).
/// Returns 1 on success, 0 for iterations < 1 or a salt longer than 1024 bytes.
int fast_pbkdf2_hmac_sha1(const unsigned char *pass, size_t passlen, const unsigned char *salt, size_t saltlen,
                          unsigned long iterations, unsigned char *out, size_t outlen, int portable);

/// Two PBKDF2-HMAC-SHA1 computations with the same iteration count at once: with the SHA extensions and outputs of
/// at most 40 bytes each, their four output blocks share one instruction stream (four independent chains keep the
/// SHA unit busier than two); otherwise the two run one after the other. The outputs are exactly those of two calls
/// of `fast_pbkdf2_hmac_sha1`. Returns 1 on success, 0 for iterations < 1 or a salt longer than 1024 bytes.
int fast_pbkdf2_hmac_sha1_pair(const unsigned char *pass1, size_t passlen1, const unsigned char *salt1, size_t saltlen1,
                               unsigned char *out1, size_t outlen1,
                               const unsigned char *pass2, size_t passlen2, const unsigned char *salt2, size_t saltlen2,
                               unsigned char *out2, size_t outlen2, unsigned long iterations);

/// 1 when this CPU has the SHA extensions (and the automatic choice uses them).
int fast_pbkdf2_uses_sha_extensions(void);

#endif
