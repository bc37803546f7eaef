// pthread_setname_np(3), which Swift's Glibc module does not export (it needs _GNU_SOURCE).
#define _GNU_SOURCE
#include <pthread.h>

/// Names the calling thread (the kernel keeps 15 bytes); 0 or an errno.
static inline int cplatform_name_thread(const char *name) {
    return pthread_setname_np(pthread_self(), name);
}

#include <fcntl.h>

/// open(2)'s O_NOATIME (GNU), per architecture.
static inline int cplatform_o_noatime(void) {
    return O_NOATIME;
}
