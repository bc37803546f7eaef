#ifndef SYNCAGENT_CLIBGIT2_SHIM_H
#define SYNCAGENT_CLIBGIT2_SHIM_H
#include <git2.h>
#include <git2/sys/repository.h>
#include <git2/sys/odb_backend.h>
#include <git2/sys/mempack.h>
#include <git2/sys/transport.h>
#include <stdlib.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/syscall.h>

/* A subtransport and its stream with room for the Swift object behind each (the struct libgit2
   knows comes first, so a pointer to one is a pointer to the other). */
typedef struct {
    git_smart_subtransport parent;
    void *owner;
} syncagent_subtransport;
typedef struct {
    git_smart_subtransport_stream parent;
    void *owner;
} syncagent_stream;

/* An object database backend and its write stream with room for the Swift object behind each. */
typedef struct {
    git_odb_backend parent;
    void *owner;
} syncagent_odb_backend;
typedef struct {
    git_odb_stream parent;
    void *owner;
} syncagent_odb_stream;


/* copy_file_range(2) needs _GNU_SOURCE, which this header does not set. */
static inline long syncagent_copy_file_range(int in, int out, size_t length) {
    return syscall(SYS_copy_file_range, in, (void *)0, out, (void *)0, length, 0u);
}

/* git_libgit2_opts is variadic and not imported into Swift: one wrapper per option we use. */
static inline int syncagent_git_set_owner_validation(int enabled) {
    return git_libgit2_opts(GIT_OPT_SET_OWNER_VALIDATION, enabled);
}
static inline int syncagent_git_set_search_path(int level, const char *path) {
    return git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, level, path);
}
static inline int syncagent_git_enable_fsync_gitdir(int enabled) {
    return git_libgit2_opts(GIT_OPT_ENABLE_FSYNC_GITDIR, enabled);
}
static inline int syncagent_git_enable_strict_object_creation(int enabled) {
    return git_libgit2_opts(GIT_OPT_ENABLE_STRICT_OBJECT_CREATION, enabled);
}
static inline int syncagent_git_enable_strict_hash_verification(int enabled) {
    return git_libgit2_opts(GIT_OPT_ENABLE_STRICT_HASH_VERIFICATION, enabled);
}
static inline int syncagent_git_set_ssl_cert_locations(const char *file, const char *path) {
    return git_libgit2_opts(GIT_OPT_SET_SSL_CERT_LOCATIONS, file, path);
}
static inline int syncagent_git_set_cache_max_size(ssize_t bytes) {
    return git_libgit2_opts(GIT_OPT_SET_CACHE_MAX_SIZE, bytes);
}
static inline int syncagent_git_set_cache_object_limit(git_object_t type, size_t bytes) {
    return git_libgit2_opts(GIT_OPT_SET_CACHE_OBJECT_LIMIT, type, bytes);
}
static inline int syncagent_git_enable_caching(int enabled) {
    return git_libgit2_opts(GIT_OPT_ENABLE_CACHING, enabled);
}
static inline int syncagent_git_set_mwindow_size(size_t bytes) {
    return git_libgit2_opts(GIT_OPT_SET_MWINDOW_SIZE, bytes);
}
static inline int syncagent_git_set_mwindow_mapped_limit(size_t bytes) {
    return git_libgit2_opts(GIT_OPT_SET_MWINDOW_MAPPED_LIMIT, bytes);
}
static inline int syncagent_git_set_mwindow_file_limit(size_t files) {
    return git_libgit2_opts(GIT_OPT_SET_MWINDOW_FILE_LIMIT, files);
}
#endif
