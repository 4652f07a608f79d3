#ifndef CZLIB_SHIM_H
#define CZLIB_SHIM_H
#include <zlib.h>

// deflateInit2/inflateInit2 are macros; Swift needs functions.
static inline int czlib_deflate_init_gzip(z_stream *s, int level) {
    return deflateInit2(s, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
}

// zlib-wrapped deflate (RFC 1950), as HdrHistogram's compressed encoding uses.
static inline int czlib_deflate_init_zlib(z_stream *s, int level) {
    return deflateInit2(s, level, Z_DEFLATED, 15, 8, Z_DEFAULT_STRATEGY);
}

static inline int czlib_inflate_init_auto(z_stream *s) {
    // 15 + 32: accept zlib or gzip headers.
    return inflateInit2(s, 15 + 32);
}
#endif
