#ifndef SYNCAGENT_CCOMPRESSION_SHIM_H
#define SYNCAGENT_CCOMPRESSION_SHIM_H
/* zlib, libdeflate and OpenSSL's digests: what the object storage of our own needs (no libgit2). */
#include <zlib.h>
#include <libdeflate.h>
#include <openssl/evp.h>
#include <stdlib.h>

/* inflateInit is a macro: a function Swift can call. */
static inline int syncagent_inflate_init(z_stream *stream) {
    return inflateInit(stream);
}
static inline int syncagent_deflate_init(z_stream *stream, int level) {
    return deflateInit(stream, level);
}

#endif
