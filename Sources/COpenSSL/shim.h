#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H

// The low-level SHA1_* calls below are deprecated in OpenSSL 3 but remain supported; they let PBKDF2 reuse the
// HMAC key pads instead of re-deriving them on every iteration, as OpenSSL's generic PKCS5_PBKDF2_HMAC does.
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <string.h>

#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/err.h>
#include <openssl/sha.h>
#include <openssl/bn.h>

// OPENSSL_free is a macro; Swift needs a function.
static inline void copenssl_free(void *ptr) {
    OPENSSL_free(ptr);
}

/// Writes a SHA-1 state's five words big-endian (the digest once the final block has been processed).
static inline void copenssl_sha1_state(const SHA_CTX *c, unsigned char *out) {
    const SHA_LONG h[5] = {c->h0, c->h1, c->h2, c->h3, c->h4};
    for (int k = 0; k < 5; k++) {
        out[4 * k] = (unsigned char)(h[k] >> 24);
        out[4 * k + 1] = (unsigned char)(h[k] >> 16);
        out[4 * k + 2] = (unsigned char)(h[k] >> 8);
        out[4 * k + 3] = (unsigned char)h[k];
    }
}

/// PBKDF2-HMAC-SHA1 (RFC 8018) with the inner and outer HMAC states computed once per password.
/// Returns 1 on success.
static inline int copenssl_pbkdf2_hmac_sha1(const unsigned char *pass, size_t passlen,
                                            const unsigned char *salt, size_t saltlen,
                                            unsigned long iterations, unsigned char *out, size_t outlen) {
    if (iterations < 1 || saltlen > 1024) return 0;
    unsigned char key[64];
    memset(key, 0, sizeof key);
    if (passlen > 64) {
        SHA1(pass, passlen, key);
    } else {
        memcpy(key, pass, passlen);
    }
    unsigned char ipad[64], opad[64];
    for (int i = 0; i < 64; i++) { ipad[i] = key[i] ^ 0x36; opad[i] = key[i] ^ 0x5c; }
    SHA_CTX inner, outer, ctx;
    if (!SHA1_Init(&inner) || !SHA1_Update(&inner, ipad, 64)) return 0;
    if (!SHA1_Init(&outer) || !SHA1_Update(&outer, opad, 64)) return 0;

    unsigned char block[1028];
    memcpy(block, salt, saltlen);
    unsigned char u[20], t[20];
    unsigned long blockIndex = 1;
    size_t done = 0;
    while (done < outlen) {
        block[saltlen] = (unsigned char)(blockIndex >> 24);
        block[saltlen + 1] = (unsigned char)(blockIndex >> 16);
        block[saltlen + 2] = (unsigned char)(blockIndex >> 8);
        block[saltlen + 3] = (unsigned char)blockIndex;
        ctx = inner; SHA1_Update(&ctx, block, saltlen + 4); SHA1_Final(u, &ctx);
        ctx = outer; SHA1_Update(&ctx, u, 20); SHA1_Final(u, &ctx);
        memcpy(t, u, 20);
        // Every later HMAC input is 20 bytes after a 64-byte pad: one padded block, hashed with one SHA1_Transform
        // from the saved pad state (message length 84 bytes = 672 bits).
        unsigned char padded[64];
        memset(padded, 0, sizeof padded);
        padded[20] = 0x80;
        padded[62] = 0x02;
        padded[63] = 0xA0;
        for (unsigned long it = 1; it < iterations; it++) {
            memcpy(padded, u, 20);
            ctx = inner; SHA1_Transform(&ctx, padded);
            copenssl_sha1_state(&ctx, padded);
            ctx = outer; SHA1_Transform(&ctx, padded);
            copenssl_sha1_state(&ctx, u);
            for (int j = 0; j < 20; j++) t[j] ^= u[j];
        }
        size_t take = outlen - done < 20 ? outlen - done : 20;
        memcpy(out + done, t, take);
        done += take;
        blockIndex++;
    }
    return 1;
}

#endif
