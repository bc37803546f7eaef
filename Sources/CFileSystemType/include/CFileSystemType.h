// statfs(2)'s f_type, which Swift's Glibc module does not export.
#include <sys/vfs.h>

/// The file system type (magic number) of the file system holding `path`; -1 when statfs fails.
static inline long cfs_type(const char *path) {
    struct statfs info;
    if (statfs(path, &info) != 0) return -1;
    return (long)info.f_type;
}
