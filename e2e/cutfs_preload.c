/* cutfs_preload.so: lets a program's syncfs(2) and sync(2) reach cutfs (e2e/cutfs.py).
 *
 * The kernel sends FUSE_SYNCFS to virtiofs only, so a syncfs on any other FUSE mount returns 0
 * without cutfs ever hearing of it; on a disk it would have made everything written durable.
 * Loaded with LD_PRELOAD, this library runs the real call, then sets the extended attribute
 * `user.cutfs.syncfs` on the same file system (fsetxattr on the descriptor for syncfs; on the
 * root of every cutfs mount for sync), which cutfs takes as "make everything durable". Descriptors
 * on any other file system are left alone (no attribute is ever set on them).
 *
 *     cc -shared -fPIC -O2 -o cutfs_preload.so e2e/cutfs_preload.c -ldl
 *     LD_PRELOAD=$PWD/cutfs_preload.so syncagent run ...
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#define FUSE_SUPER_MAGIC 0x65735546
#define MARK "user.cutfs.syncfs"

static void mark_fd(int fd) {
    struct statfs s;
    int saved = errno;
    if (fstatfs(fd, &s) == 0 && (unsigned long)s.f_type == FUSE_SUPER_MAGIC)
        (void)fsetxattr(fd, MARK, "1", 1, 0);
    errno = saved;
}

int syncfs(int fd) {
    static int (*real)(int);
    if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "syncfs");
    int rc = real ? real(fd) : 0;
    int saved = errno;
    mark_fd(fd);
    errno = saved;
    return rc;
}

void sync(void) {
    static void (*real)(void);
    if (!real) real = (void (*)(void))dlsym(RTLD_NEXT, "sync");
    if (real) real();
    int saved = errno;
    FILE *m = fopen("/proc/self/mounts", "re");
    if (m) {
        char dev[4096], dir[4096], type[256];
        while (fscanf(m, "%4095s %4095s %255s %*[^\n]", dev, dir, type) == 3) {
            if (strcmp(type, "fuse.cutfs") == 0)
                (void)setxattr(dir, MARK, "1", 1, 0);
        }
        fclose(m);
    }
    errno = saved;
}
