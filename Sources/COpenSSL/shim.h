#ifndef COPENSSL_SHIM_H
#define COPENSSL_SHIM_H

#include <string.h>

#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/err.h>
#include <openssl/bn.h>

// OPENSSL_free is a macro; Swift needs a function.
static inline void copenssl_free(void *ptr) {
    OPENSSL_free(ptr);
}

#endif
