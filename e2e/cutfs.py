#!/usr/bin/python3
"""cutfs: an in-memory FUSE file system that can lose power (issue 43).

Programs see an ordinary POSIX file system (regular files, directories, symbolic links, FIFOs and
sockets, hard links, nanosecond times, O_APPEND/O_TRUNC/O_EXCL, rename with RENAME_NOREPLACE and
RENAME_EXCHANGE, mmap reads, statfs, fsync, fdatasync, fsync of directories). Next to what programs
see, cutfs keeps what a disk would still hold after a power cut, under a strict model (ALICE's, or
ext4's delayed allocation without its rename and truncate heuristics):

  * fsync/fdatasync of a file makes that inode's current bytes, size, mode and times durable;
  * fsync of a directory makes its current entries (name -> inode) and its mode and times durable;
    the inode of a newly durable entry exists durably: a file whose bytes were never made durable
    exists with length 0, a new directory exists empty (unless itself fsynced), a symbolic link or
    FIFO exists whole;
  * a rename is atomic once either of its directories is made durable: the entry that moved is
    taken out of, or put into, the other directory's durable entries with it (no file is both at
    its old and new name after a cut, nor at neither);
  * nothing else becomes durable by itself: not bytes, not new names, not renames, not unlinks,
    not truncates;
  * the state at mount time (empty) is durable; `sync` (control command, or SIGUSR2) makes
    everything durable; with --commit-interval N, everything becomes durable every N seconds (off
    by default);
  * --model journal (instead of the default strict model above) is ext4's journal (data=ordered,
    delayed allocation, no auto_da_alloc): any fsync or fsync of a directory also commits every
    name, rename, unlink, truncate, mode and time made so far, anywhere; bytes still survive only
    by their own file's fsync. A file named durably whose bytes never were is empty, or, with
    --unsynced zeros, holds its size in zeros (XFS, ext4 data=writeback): what a git that does not
    fsync leaves after a crash (empty or zero-filled refs, index and loose objects);
  * syncfs(2) never reaches a FUSE file system (the kernel sends FUSE_SYNCFS to virtiofs only), so a
    program's syncfs is modelled through cutfs_preload.c (LD_PRELOAD): after the real syncfs it sets
    the extended attribute `user.cutfs.syncfs` on the same descriptor, which cutfs takes as "make
    everything durable". Without the preload a syncfs makes nothing durable here.

`cut` (control command, or SIGUSR1) replaces the live state with the durable state at once, between
two operations. Open handles from before the cut become stale: writes, truncates, fsyncs and
readdirs through them fail with EIO; reads through them still return the bytes the file held at the
cut (a reader on another machine, such as a peer agent fetching from this store by path, is not
killed by SIGBUS on a mapped pack). The kernel's caches are invalidated (pages, attributes); entry
and attribute timeouts are 0, so every lookup and stat asks cutfs. Inode numbers are kept across a
cut, as a disk keeps them across a reboot.

Control: a Unix socket (--control PATH, outside the mount): one command per line, one JSON line
back: `ping`, `sync`, `cut`, `stats`, `recent` (the last mutating operations, with pid, for telling
what a process was doing when the power went). A cut's report (bytes and names dropped, and every
path whose content, type or presence the cut changed, with git blob ids before and after) goes back
to the caller and to the log (--log).

    /usr/bin/python3 e2e/cutfs.py MOUNTPOINT --control /tmp/c.sock [--ready FILE] [--log FILE]
    fusermount3 -u MOUNTPOINT          # unmounts; cutfs exits 0

Needs Debian's fuse3 and python3-pyfuse3 (they install for /usr/bin/python3). Root; no allow_other.
"""

import argparse
import collections
import errno
import hashlib
import json
import os
import signal
import stat
import sys
import time

import pyfuse3
import trio

ROOT = pyfuse3.ROOT_INODE
SYNCFS_XATTR = b"user.cutfs.syncfs"
CLOCK_REALTIME_COARSE = 5          # the kernel stamps inodes with its coarse clock, as ext4 and tmpfs do
REPORT_PATHS_MAX = 20000           # paths listed in one cut report (the counts are always complete)
HASH_MAX = 256 << 20               # files bigger than this are reported by size only


def now_ns():
    return time.clock_gettime_ns(CLOCK_REALTIME_COARSE)


def blob_oid(data):
    h = hashlib.sha1(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


class Node:
    """A live inode. `names` holds every (parent inode, name) that refers to it."""
    __slots__ = ("ino", "mode", "uid", "gid", "rdev", "data", "target", "entries", "names", "nlink",
                 "atime", "mtime", "ctime", "btime", "opens", "nlookup", "trunc")

    def __init__(self, ino, mode, uid, gid, t):
        self.ino = ino
        self.mode = mode
        self.uid = uid
        self.gid = gid
        self.rdev = 0
        self.data = bytearray() if stat.S_ISREG(mode) else None
        self.target = None
        self.entries = {} if stat.S_ISDIR(mode) else None
        self.names = set()
        self.nlink = 0
        self.atime = self.mtime = self.ctime = self.btime = t
        self.opens = 0
        self.nlookup = 0
        self.trunc = None        # the smallest size since its bytes were last made durable (a truncate)

    @property
    def is_dir(self):
        return self.entries is not None


class Durable:
    """What the disk holds for one inode."""
    __slots__ = ("mode", "uid", "gid", "rdev", "data", "target", "entries", "atime", "mtime", "ctime", "btime")

    def __init__(self, node, with_data, zero_fill=False):
        self.mode = node.mode
        self.uid = node.uid
        self.gid = node.gid
        self.rdev = node.rdev
        self.target = node.target
        self.atime, self.mtime, self.ctime, self.btime = node.atime, node.mtime, node.ctime, node.btime
        if node.data is not None:
            # never made durable: empty (ext4's delayed allocation), or its current size in zeros
            # (XFS, ext4 data=writeback: the size reached the journal, the bytes never did)
            self.data = bytes(node.data) if with_data else bytes(len(node.data)) if zero_fill else b""
            if not with_data:   # never made durable: the times it had when it was made
                self.atime = self.mtime = self.ctime = node.btime
        else:
            self.data = None
        self.entries = {} if node.entries is not None else None

    def take_meta(self, node):
        self.mode, self.uid, self.gid = node.mode, node.uid, node.gid
        self.atime, self.mtime, self.ctime = node.atime, node.mtime, node.ctime


class Handle:
    __slots__ = ("node", "epoch", "is_dir", "listing", "pid")

    def __init__(self, node, epoch, is_dir, pid):
        self.node = node
        self.epoch = epoch
        self.is_dir = is_dir
        self.listing = None
        self.pid = pid


def fail(code):
    raise pyfuse3.FUSEError(code)


class CutFS(pyfuse3.Operations):
    supports_dot_lookup = True
    enable_writeback_cache = False

    def __init__(self, log, zero_fill=False, trace=None, journal=False):
        super().__init__()
        self.journal = journal
        self.log = log
        self.trace = trace
        self.zero_fill = zero_fill
        self.next_ino = ROOT + 1
        self.next_fh = 1
        self.epoch = 0
        self.handles = {}
        t = now_ns()
        root = Node(ROOT, stat.S_IFDIR | 0o755, os.getuid(), os.getgid(), t)
        root.nlink = 2
        self.nodes = {ROOT: root}
        self.durable = {ROOT: Durable(root, True)}
        self.dnames = {ROOT: set()}          # durable inode -> {(durable parent, name)}
        self.dirty = set()                   # inodes whose live state may differ from the durable one
        self.live_bytes = 0
        self.recent = collections.deque(maxlen=256)
        self.counts = collections.Counter()

    # ---- helpers -------------------------------------------------------------------------------

    def note(self, op, ctx, ino, name=None, extra=None):
        self.record((time.time(), ctx.pid if ctx is not None else 0, op, ino, name, extra))

    def record(self, item):
        self.recent.append(item)
        if self.trace is not None:
            t, pid, op, ino, name, extra = item
            path = self.live_path(ino)
            if path is not None and name is not None:
                path = path + b"/" + name if path else name
            line = "%.6f %d %s %s" % (t, pid, op, path.decode("utf-8", "backslashreplace") if path is not None else "#%d" % ino)
            if extra is not None:
                p2 = self.live_path(extra[0])
                line += " -> %s" % ((p2 + b"/" + extra[1] if p2 else extra[1]).decode("utf-8", "backslashreplace") if p2 is not None else "?")
            if op in ("write", "fsync", "fsyncdir", "truncate", "setattr"):
                line += " ino=%d" % ino
            self.trace.write(line + "\n")

    def node(self, ino):
        n = self.nodes.get(ino)
        if n is None:
            fail(errno.ENOENT)
        return n

    def dir_node(self, ino):
        n = self.node(ino)
        if not n.is_dir:
            fail(errno.ENOTDIR)
        return n

    def attrs(self, n):
        a = pyfuse3.EntryAttributes()
        a.st_ino = n.ino
        a.generation = 0
        a.entry_timeout = 0
        a.attr_timeout = 0
        a.st_mode = n.mode
        a.st_nlink = n.nlink
        a.st_uid = n.uid
        a.st_gid = n.gid
        a.st_rdev = n.rdev
        if n.data is not None:
            size = len(n.data)
        elif n.target is not None:
            size = len(n.target)
        elif n.is_dir:
            size = 4096
        else:
            size = 0
        a.st_size = size
        a.st_blksize = 4096
        a.st_blocks = (size + 511) // 512
        a.st_atime_ns = n.atime
        a.st_mtime_ns = n.mtime
        a.st_ctime_ns = n.ctime
        a.st_birthtime_ns = n.btime
        return a

    def entry(self, n):
        n.nlookup += 1
        return self.attrs(n)

    def new_node(self, mode, ctx):
        ino = self.next_ino
        self.next_ino += 1
        n = Node(ino, mode, ctx.uid, ctx.gid, now_ns())
        self.nodes[ino] = n
        self.dirty.add(ino)
        return n

    def touch_dir(self, d):
        d.mtime = d.ctime = now_ns()
        self.dirty.add(d.ino)

    def add_entry(self, d, name, n):
        d.entries[name] = n.ino
        n.names.add((d.ino, name))
        n.nlink += 1
        if n.is_dir:
            n.nlink += 1          # its "."
            d.nlink += 1          # its ".."
        self.touch_dir(d)

    def drop_entry(self, d, name, n):
        del d.entries[name]
        n.names.discard((d.ino, name))
        n.nlink -= 1
        if n.is_dir:
            n.nlink -= 1
            d.nlink -= 1
        n.ctime = now_ns()
        self.dirty.add(n.ino)
        self.touch_dir(d)
        self.maybe_free(n)

    def maybe_free(self, n):
        if n.nlink <= 0 and n.opens <= 0 and n.nlookup <= 0 and self.nodes.get(n.ino) is n and n.ino != ROOT:
            del self.nodes[n.ino]
            if n.data is not None:
                self.live_bytes -= len(n.data)
            self.dirty.discard(n.ino)
            if n.ino in self.durable and not self.dnames.get(n.ino):
                del self.durable[n.ino]
                self.dnames.pop(n.ino, None)

    def check_name(self, name):
        if len(name) > 255:
            fail(errno.ENAMETOOLONG)

    def handle(self, fh):
        h = self.handles.get(fh)
        if h is None:
            fail(errno.EBADF)
        return h

    def live_handle(self, fh, op):
        h = self.handle(fh)
        if h.epoch != self.epoch:
            # Logged: an EIO a restarted agent meets must be told apart from the agent's own fault
            # (seed 26: a merge's write failed with EIO after a cut and was not written 30 s later).
            log(getattr(self, "logf", None), "EIO: %s through a handle from before cut %d (opened by pid %s, %s), now cut %d"
                % (op, h.epoch, h.pid, self.live_path(h.node.ino), self.epoch))
            fail(errno.EIO)
        return h

    @staticmethod
    def writable(n):
        """n's bytes as a bytearray of its own: bytes shared with the durable copy (after an fsync
        or a cut) are copied on the first change, so a file written once costs its size once."""
        if type(n.data) is not bytearray:
            n.data = bytearray(n.data)
        return n.data

    def set_size(self, n, size):
        self.writable(n)
        old = len(n.data)
        if size < old and (n.trunc is None or size < n.trunc):
            n.trunc = size
        if size < old:
            del n.data[size:]
        elif size > old:
            n.data.extend(bytes(size - old))
        self.live_bytes += size - old

    # ---- lookups and attributes ----------------------------------------------------------------

    async def lookup(self, parent_inode, name, ctx):
        d = self.dir_node(parent_inode)
        if name == b".":
            return self.entry(d)
        if name == b"..":
            return self.entry(self.nodes[self.parent_of(d)])
        ino = d.entries.get(name)
        if ino is None:
            fail(errno.ENOENT)
        return self.entry(self.nodes[ino])

    def parent_of(self, d):
        for p, _ in d.names:
            return p
        return ROOT

    async def forget(self, inode_list):
        for ino, count in inode_list:
            n = self.nodes.get(ino)
            if n is not None:
                n.nlookup = max(0, n.nlookup - count)
                self.maybe_free(n)

    async def getattr(self, inode, ctx):
        return self.attrs(self.node(inode))

    async def setattr(self, inode, attr, fields, fh, ctx):
        if fh is not None:
            h = self.live_handle(fh, "setattr")
            n = h.node
        else:
            n = self.node(inode)
        t = now_ns()
        changed = False
        if fields.update_size:
            if n.data is None:
                fail(errno.EISDIR if n.is_dir else errno.EINVAL)
            if attr.st_size != len(n.data):
                self.set_size(n, attr.st_size)
                n.mtime = t
            changed = True
        if fields.update_mode:
            n.mode = stat.S_IFMT(n.mode) | stat.S_IMODE(attr.st_mode)
            changed = True
        if fields.update_uid:
            n.uid = attr.st_uid
            changed = True
        if fields.update_gid:
            n.gid = attr.st_gid
            changed = True
        if fields.update_atime:
            n.atime = attr.st_atime_ns
            changed = True
        if fields.update_mtime:
            n.mtime = attr.st_mtime_ns
            changed = True
        if changed:
            n.ctime = attr.st_ctime_ns if fields.update_ctime else t
            self.dirty.add(n.ino)
            self.note("setattr", ctx, n.ino)
        return self.attrs(n)

    async def readlink(self, inode, ctx):
        n = self.node(inode)
        if n.target is None:
            fail(errno.EINVAL)
        return n.target

    async def statfs(self, ctx):
        s = pyfuse3.StatvfsData()
        s.f_bsize = 4096
        s.f_frsize = 4096
        total = 64 << 30
        used = (self.live_bytes + 4095) // 4096
        s.f_blocks = total // 4096
        s.f_bfree = max(0, s.f_blocks - used)
        s.f_bavail = s.f_bfree
        s.f_files = 1 << 24
        s.f_ffree = max(0, s.f_files - len(self.nodes))
        s.f_favail = s.f_ffree
        s.f_namemax = 255
        return s

    # ---- making names --------------------------------------------------------------------------

    def make(self, parent_inode, name, mode, ctx, op):
        self.check_name(name)
        d = self.dir_node(parent_inode)
        if name in d.entries:
            fail(errno.EEXIST)
        n = self.new_node(mode, ctx)
        self.add_entry(d, name, n)
        self.note(op, ctx, d.ino, name)
        return n

    async def mknod(self, parent_inode, name, mode, rdev, ctx):
        fmt = stat.S_IFMT(mode)
        if fmt not in (stat.S_IFREG, stat.S_IFIFO, stat.S_IFSOCK, stat.S_IFCHR, stat.S_IFBLK):
            fail(errno.EINVAL)
        n = self.make(parent_inode, name, mode, ctx, "mknod")
        n.rdev = rdev
        return self.entry(n)

    async def mkdir(self, parent_inode, name, mode, ctx):
        n = self.make(parent_inode, name, stat.S_IFDIR | stat.S_IMODE(mode), ctx, "mkdir")
        return self.entry(n)

    async def symlink(self, parent_inode, name, target, ctx):
        n = self.make(parent_inode, name, stat.S_IFLNK | 0o777, ctx, "symlink")
        n.target = bytes(target)
        return self.entry(n)

    async def link(self, inode, new_parent_inode, new_name, ctx):
        self.check_name(new_name)
        n = self.node(inode)
        if n.is_dir:
            fail(errno.EPERM)
        d = self.dir_node(new_parent_inode)
        if new_name in d.entries:
            fail(errno.EEXIST)
        self.add_entry(d, new_name, n)
        n.ctime = now_ns()
        self.dirty.add(n.ino)
        self.note("link", ctx, d.ino, new_name)
        return self.entry(n)

    async def unlink(self, parent_inode, name, ctx):
        d = self.dir_node(parent_inode)
        ino = d.entries.get(name)
        if ino is None:
            fail(errno.ENOENT)
        n = self.nodes[ino]
        if n.is_dir:
            fail(errno.EISDIR)
        self.note("unlink", ctx, d.ino, name)
        self.drop_entry(d, name, n)

    async def rmdir(self, parent_inode, name, ctx):
        d = self.dir_node(parent_inode)
        ino = d.entries.get(name)
        if ino is None:
            fail(errno.ENOENT)
        n = self.nodes[ino]
        if not n.is_dir:
            fail(errno.ENOTDIR)
        if n.entries:
            fail(errno.ENOTEMPTY)
        self.note("rmdir", ctx, d.ino, name)
        self.drop_entry(d, name, n)

    def is_ancestor(self, a, d):
        """Whether directory inode `a` is `d` or one of its ancestors."""
        seen = 0
        while True:
            if d.ino == a:
                return True
            if d.ino == ROOT or seen > 4096:
                return False
            d = self.nodes[self.parent_of(d)]
            seen += 1

    async def rename(self, parent_inode_old, name_old, parent_inode_new, name_new, flags, ctx):
        self.check_name(name_new)
        if flags & ~(pyfuse3.RENAME_EXCHANGE | pyfuse3.RENAME_NOREPLACE):
            fail(errno.EINVAL)
        if (flags & pyfuse3.RENAME_EXCHANGE) and (flags & pyfuse3.RENAME_NOREPLACE):
            fail(errno.EINVAL)
        sd = self.dir_node(parent_inode_old)
        dd = self.dir_node(parent_inode_new)
        sino = sd.entries.get(name_old)
        if sino is None:
            fail(errno.ENOENT)
        s = self.nodes[sino]
        dino = dd.entries.get(name_new)
        t = self.nodes[dino] if dino is not None else None
        if s.is_dir and self.is_ancestor(s.ino, dd):
            fail(errno.EINVAL)
        if flags & pyfuse3.RENAME_EXCHANGE:
            if t is None:
                fail(errno.ENOENT)
            if t.is_dir and self.is_ancestor(t.ino, sd):
                fail(errno.EINVAL)
            if sd is dd and name_old == name_new:
                return
            self.note("exchange", ctx, sd.ino, name_old, (dd.ino, name_new))
            # swap the two entries: s goes to dd/name_new, t to sd/name_old
            s.names.discard((sd.ino, name_old))
            t.names.discard((dd.ino, name_new))
            sd.entries[name_old] = t.ino
            dd.entries[name_new] = s.ino
            s.names.add((dd.ino, name_new))
            t.names.add((sd.ino, name_old))
            if sd is not dd:
                if s.is_dir:
                    sd.nlink -= 1
                    dd.nlink += 1
                if t.is_dir:
                    dd.nlink -= 1
                    sd.nlink += 1
            tm = now_ns()
            s.ctime = t.ctime = tm
            self.dirty.add(s.ino)
            self.dirty.add(t.ino)
            self.touch_dir(sd)
            self.touch_dir(dd)
            return
        if t is not None:
            if flags & pyfuse3.RENAME_NOREPLACE:
                fail(errno.EEXIST)
            if t is s:
                return          # two names of one inode: POSIX says do nothing
            if s.is_dir:
                if not t.is_dir:
                    fail(errno.ENOTDIR)
                if t.entries:
                    fail(errno.ENOTEMPTY)
            elif t.is_dir:
                fail(errno.EISDIR)
        self.note("rename", ctx, sd.ino, name_old, (dd.ino, name_new))
        if t is not None:
            self.drop_entry(dd, name_new, t)
        # move s without counting it as unlinked in between
        del sd.entries[name_old]
        s.names.discard((sd.ino, name_old))
        dd.entries[name_new] = s.ino
        s.names.add((dd.ino, name_new))
        if s.is_dir and sd is not dd:
            sd.nlink -= 1
            dd.nlink += 1
        s.ctime = now_ns()
        self.dirty.add(s.ino)
        self.touch_dir(sd)
        self.touch_dir(dd)

    # ---- files ---------------------------------------------------------------------------------

    def open_handle(self, n, ctx, is_dir=False):
        fh = self.next_fh
        self.next_fh += 1
        self.handles[fh] = Handle(n, self.epoch, is_dir, ctx.pid)
        n.opens += 1
        return fh

    def file_info(self, fh):
        fi = pyfuse3.FileInfo()
        fi.fh = fh
        fi.direct_io = False
        fi.keep_cache = False
        fi.nonseekable = False
        return fi

    async def open(self, inode, flags, ctx):
        n = self.node(inode)
        if n.is_dir:
            fail(errno.EISDIR)
        if n.data is None:
            fail(errno.ENXIO if stat.S_ISSOCK(n.mode) else errno.EINVAL)
        if (flags & os.O_TRUNC) and (flags & os.O_ACCMODE) != os.O_RDONLY and n.data:
            self.set_size(n, 0)
            n.mtime = n.ctime = now_ns()
            self.dirty.add(n.ino)
            self.note("truncate", ctx, n.ino)
        return self.file_info(self.open_handle(n, ctx))

    async def create(self, parent_inode, name, mode, flags, ctx):
        self.check_name(name)
        d = self.dir_node(parent_inode)
        ino = d.entries.get(name)
        if ino is not None:
            if flags & os.O_EXCL:
                fail(errno.EEXIST)
            n = self.nodes[ino]
            if n.data is None:
                fail(errno.EISDIR if n.is_dir else errno.EEXIST)
            if flags & os.O_TRUNC and n.data:
                self.set_size(n, 0)
                n.mtime = n.ctime = now_ns()
                self.dirty.add(n.ino)
        else:
            n = self.new_node(stat.S_IFREG | stat.S_IMODE(mode), ctx)
            self.add_entry(d, name, n)
        self.note("create", ctx, d.ino, name)
        fh = self.open_handle(n, ctx)
        return self.file_info(fh), self.entry(n)

    async def read(self, fh, off, size):
        h = self.handle(fh)       # stale handles still read the bytes the file held at the cut
        data = h.node.data
        if data is None:
            fail(errno.EINVAL)
        return bytes(data[off:off + size])

    async def write(self, fh, off, buf):
        h = self.live_handle(fh, "write")
        n = h.node
        data = self.writable(n)
        end = off + len(buf)
        old = len(data)
        if off > old:
            data.extend(bytes(off - old))
        data[off:end] = buf
        self.live_bytes += len(data) - old
        n.mtime = n.ctime = now_ns()
        self.dirty.add(n.ino)
        self.counts["write_bytes"] += len(buf)
        if not self.recent or self.recent[-1][2] != "write" or self.recent[-1][3] != n.ino:
            self.record((time.time(), h.pid, "write", n.ino, None, None))
        return len(buf)

    async def flush(self, fh):
        pass

    async def release(self, fh):
        h = self.handles.pop(fh, None)
        if h is not None and h.epoch == self.epoch:
            h.node.opens -= 1
            self.maybe_free(h.node)

    async def fsync(self, fh, datasync):
        h = self.live_handle(fh, "fsync")
        self.counts["fsync"] += 1
        self.record((time.time(), h.pid, "fsync", h.node.ino, None, None))
        self.fsync_node(h.node)
        if self.journal:
            self.meta_commit()

    # ---- directories ---------------------------------------------------------------------------

    async def opendir(self, inode, ctx):
        n = self.dir_node(inode)
        return self.open_handle(n, ctx, True)

    async def readdir(self, fh, start_id, token):
        h = self.live_handle(fh, "readdir")
        d = h.node
        if start_id == 0 or h.listing is None:
            h.listing = [(b".", d.ino), (b"..", self.parent_of(d))] + list(d.entries.items())
        listing = h.listing
        i = start_id
        while i < len(listing):
            name, ino = listing[i]
            i += 1
            dot = i <= 2
            if not dot and d.entries.get(name) != ino:
                continue          # gone since the listing began
            n = self.nodes.get(ino)
            if n is None:
                continue
            if not pyfuse3.readdir_reply(token, name, self.attrs(n), i):
                return
            if not dot:
                n.nlookup += 1

    async def releasedir(self, fh):
        await self.release(fh)

    async def fsyncdir(self, fh, datasync):
        h = self.live_handle(fh, "fsyncdir")
        self.counts["fsyncdir"] += 1
        self.record((time.time(), h.pid, "fsyncdir", h.node.ino, None, None))
        self.fsync_node(h.node)
        if self.journal:
            self.meta_commit()

    # ---- extended attributes: only the syncfs marker -------------------------------------------

    async def setxattr(self, inode, name, value, ctx):
        if name == SYNCFS_XATTR:
            self.counts["syncfs"] += 1
            self.note("syncfs", ctx, inode)
            self.sync_all()
            return
        fail(errno.ENOTSUP)

    # ---- durability ----------------------------------------------------------------------------

    def fsync_node(self, n):
        if self.nodes.get(n.ino) is not n:
            return
        if n.is_dir:
            self.sync_dir(n)
        else:
            d = self.durable.get(n.ino)
            if d is None:
                d = self.durable[n.ino] = Durable(n, True)
                self.dnames.setdefault(n.ino, set())
            else:
                d.take_meta(n)
                if n.data is not None:
                    d.data = bytes(n.data) if type(n.data) is bytearray else n.data
                d.target = n.target
            if n.data is not None:
                n.data = d.data          # shared until the next change
                n.trunc = None
            self.dirty.discard(n.ino)

    def durable_of(self, n):
        """The durable inode of live node n, made (empty) when the disk does not hold it yet."""
        d = self.durable.get(n.ino)
        if d is None:
            d = self.durable[n.ino] = Durable(n, False, self.zero_fill)
            self.dnames[n.ino] = set()
        return d

    def dadd(self, dir_ino, name, ino):
        dd = self.durable[dir_ino]
        old = dd.entries.get(name)
        if old == ino:
            return
        if old is not None:
            self.ddrop(dir_ino, name)
        dd.entries[name] = ino
        self.dnames[ino].add((dir_ino, name))

    def ddrop(self, dir_ino, name):
        dd = self.durable[dir_ino]
        ino = dd.entries.pop(name)
        names = self.dnames.get(ino)
        if names is not None:
            names.discard((dir_ino, name))
            if not names and ino not in self.nodes:
                self.forget_durable(ino)

    def forget_durable(self, ino):
        d = self.durable.pop(ino, None)
        self.dnames.pop(ino, None)
        if d is not None and d.entries:
            for name, child in d.entries.items():
                names = self.dnames.get(child)
                if names is not None:
                    names.discard((ino, name))
                    if not names and child not in self.nodes:
                        self.forget_durable(child)

    def sync_dir(self, n):
        """fsync of directory n: its entries become durable, renames in or out of it whole."""
        d = self.durable_of(n)
        d.take_meta(n)
        live = n.entries
        # names that went away: unlinked, or renamed elsewhere (then the new name goes too)
        for name, ino in list(d.entries.items()):
            if live.get(name) == ino:
                continue
            self.ddrop(n.ino, name)
            m = self.nodes.get(ino)
            if m is not None:
                for (p, nm) in list(m.names):
                    pl = self.nodes.get(p)
                    if p != n.ino and p in self.durable and self.durable[p].entries.get(nm) != ino \
                            and pl is not None and pl.entries.get(nm) == ino:
                        self.durable_of(m)
                        self.dadd(p, nm, ino)
        # names that came: new, or renamed here (then the old name goes)
        for name, ino in live.items():
            if d.entries.get(name) == ino:
                continue
            m = self.nodes[ino]
            self.durable_of(m)
            self.dadd(n.ino, name, ino)
            for (p, nm) in list(self.dnames[ino]):
                if p == n.ino and nm == name:
                    continue
                pl = self.nodes.get(p)
                if pl is None or pl.entries is None or pl.entries.get(nm) != ino:
                    if p in self.durable and self.durable[p].entries.get(nm) == ino:
                        self.ddrop(p, nm)
        self.dirty.discard(n.ino)

    def meta_commit(self):
        """--model journal: a journal commit (ext4 data=ordered with delayed allocation, no
        auto_da_alloc): every name, rename, unlink, truncate, mode and time so far becomes durable
        at once; file bytes only where they were fsynced (a new file's are empty, or zeros of its
        size with --unsynced zeros, as XFS and ext4 data=writeback leave them)."""
        self.counts["journal_commit"] += 1
        files = []
        for ino in list(self.dirty):
            n = self.nodes.get(ino)
            if n is None:
                continue
            if n.is_dir:
                if n.nlink > 0 or n.ino == ROOT:
                    self.sync_dir(n)
            elif n.nlink > 0:
                files.append(n)
        still = set()
        for n in files:
            d = self.durable.get(n.ino)
            if d is None:
                continue            # named nowhere durable: nothing of it is on the disk
            d.take_meta(n)
            if n.data is not None:
                if n.trunc is not None and n.trunc < len(d.data):
                    d.data = d.data[:n.trunc]               # a truncate is journaled, its rewrite is not
                n.trunc = None
                if self.zero_fill and len(n.data) > len(d.data):
                    d.data = d.data + bytes(len(n.data) - len(d.data))
                if d.data != n.data:
                    still.add(n.ino)
            else:
                d.target = n.target
        self.dirty = still

    def sync_all(self):
        """Everything live becomes durable (sync, syncfs, a journal commit)."""
        self.counts["sync_all"] += 1
        if self.trace is not None:
            self.trace.write("%.6f 0 SYNC-ALL\n" % time.time())
        dirs = []
        for ino in list(self.dirty):
            n = self.nodes.get(ino)
            if n is None:
                continue
            if n.is_dir:
                dirs.append(n)
            elif n.nlink > 0:
                self.fsync_node(n)
        # a directory's entries after every file's bytes, parents after children not needed:
        # each directory's entries are its own
        for n in dirs:
            if n.nlink > 0 or n.ino == ROOT:
                self.sync_dir(n)
        # what is left lives nowhere durable (unlinked, still open): nothing to keep
        self.dirty = set()

    # ---- the cut -------------------------------------------------------------------------------

    def live_path(self, ino, depth=0):
        if ino == ROOT:
            return b""
        n = self.nodes.get(ino)
        if n is None or not n.names or depth > 256:
            return None
        p, name = min(n.names)
        up = self.live_path(p, depth + 1)
        return None if up is None else (up + b"/" + name if up else name)

    def durable_path(self, ino, depth=0):
        if ino == ROOT:
            return b""
        names = self.dnames.get(ino)
        if not names or depth > 256:
            return None
        p, name = min(names)
        up = self.durable_path(p, depth + 1)
        return None if up is None else (up + b"/" + name if up else name)

    @staticmethod
    def walk(get, path):
        """The inode at path in one state (get: ino -> node-like with .entries), or None."""
        ino = ROOT
        if not path:
            return ino
        for part in path.split(b"/"):
            n = get(ino)
            if n is None or n.entries is None:
                return None
            ino = n.entries.get(part)
            if ino is None:
                return None
        return ino

    @staticmethod
    def describe(n):
        if n is None:
            return None
        if n.entries is not None:
            return {"type": "dir"}
        if n.target is not None:
            return {"type": "link", "target": n.target.decode("utf-8", "surrogateescape")}
        if n.data is not None:
            out = {"type": "file", "size": len(n.data), "mode": "%o" % stat.S_IMODE(n.mode)}
            if len(n.data) <= HASH_MAX:
                out["oid"] = blob_oid(n.data)
            if n.data and n.data.count(0) == len(n.data):
                out["zeros"] = True
            return out
        return {"type": "special", "mode": "%o" % n.mode}

    def report(self):
        """What the cut about to happen changes, computed from the dirty inodes only."""
        paths = set()
        bytes_dropped = 0
        names_dropped = 0
        names_back = 0
        files_changed = 0
        truncated = False
        for ino in list(self.dirty):
            n = self.nodes.get(ino)
            d = self.durable.get(ino)
            if n is None:
                continue
            if n.is_dir:
                dents = d.entries if d is not None and d.entries is not None else {}
                lp = self.live_path(ino) if n.names or ino == ROOT else None
                dp = self.durable_path(ino) if d is not None else None
                for name, i in n.entries.items():
                    if dents.get(name) != i:
                        names_dropped += 1
                        if lp is not None:
                            paths.add(lp + b"/" + name if lp else name)
                for name, i in dents.items():
                    if n.entries.get(name) != i:
                        names_back += 1
                        if dp is not None:
                            paths.add(dp + b"/" + name if dp else name)
            elif n.nlink > 0:
                same = d is not None and d.data == n.data and d.target == n.target and d.mode == n.mode
                if not same:
                    files_changed += 1
                    if n.data is not None:
                        if d is not None and d.data is not None and n.data.startswith(d.data):
                            bytes_dropped += len(n.data) - len(d.data)     # an append lost
                        else:
                            bytes_dropped += len(n.data)
                    lp = self.live_path(ino)
                    if lp is not None:
                        paths.add(lp)
                    dp = self.durable_path(ino)
                    if dp is not None:
                        paths.add(dp)
        live_get = self.nodes.get
        dur_get = self.durable.get
        changes = []
        todo = sorted(paths)
        seen = set()
        while todo:
            if len(changes) >= REPORT_PATHS_MAX:
                truncated = True
                break
            p = todo.pop()
            if p in seen:
                continue
            seen.add(p)
            li = self.walk(live_get, p)
            di = self.walk(dur_get, p)
            ln = self.nodes.get(li) if li is not None else None
            dn = self.durable.get(di) if di is not None else None
            before, after = self.describe(ln), self.describe(dn)
            if before == after and (before is None or before["type"] != "dir" or li == di):
                continue
            if not (before and before["type"] == "dir" and after and after["type"] == "dir"):
                changes.append({"path": p.decode("utf-8", "surrogateescape"), "before": before, "after": after})
            # a directory that appeared, vanished or is another directory now: everything under it
            for node in (ln, dn):
                if node is not None and node.entries is not None and li != di:
                    for name in node.entries:
                        todo.append(p + b"/" + name if p else name)
        return {"bytes_dropped": bytes_dropped, "names_dropped": names_dropped,
                "names_resurrected": names_back, "inodes_reverted": files_changed,
                "changes": changes, "changes_truncated": truncated}

    def cut(self):
        rep = self.report()
        old_nodes = self.nodes
        new = {}
        # the durable tree, breadth first from the root; a directory reached twice keeps its first name
        order = [ROOT]
        new[ROOT] = self.revive(ROOT, old_nodes)
        dropped_dirs = []
        i = 0
        while i < len(order):
            dino = order[i]
            i += 1
            dd = self.durable[dino]
            for name in sorted(dd.entries):
                ino = dd.entries[name]
                cd = self.durable.get(ino)
                if cd is None:
                    del dd.entries[name]
                    continue
                if cd.entries is not None:
                    if ino in new:
                        del dd.entries[name]
                        dropped_dirs.append(name)
                        continue
                    order.append(ino)
                if ino not in new:
                    new[ino] = self.revive(ino, old_nodes)
                c = new[ino]
                c.names.add((dino, name))
                new[dino].entries[name] = ino
                c.nlink += 1
                if c.is_dir:
                    c.nlink += 1
                    new[dino].nlink += 1
        new[ROOT].nlink += 2
        # inodes the kernel still knows but the disk lost: kept, unnamed, until forgotten
        for ino, n in old_nodes.items():
            if ino not in new and n.nlookup > 0:
                n.names = set()
                n.nlink = 0
                n.opens = 0
                if n.entries is not None:
                    n.entries = {}
                new[ino] = n
        kernel_known = [ino for ino, n in old_nodes.items() if n.nlookup > 0]
        self.nodes = new
        self.durable = {ino: self.durable[ino] for ino in new if ino in self.durable and (new[ino].names or ino == ROOT)}
        self.dnames = {ino: set(n.names) for ino, n in new.items() if ino in self.durable}
        self.dnames[ROOT] = set()
        self.dirty = set()
        self.live_bytes = sum(len(n.data) for n in new.values() if n.data is not None and n.nlink > 0)
        self.epoch += 1
        rep["cut"] = self.epoch
        rep["directories_named_twice"] = len(dropped_dirs)
        rep["handles_stale"] = len(self.handles)
        return rep, kernel_known

    def revive(self, ino, old_nodes):
        d = self.durable[ino]
        n = Node.__new__(Node)
        n.ino = ino
        n.mode, n.uid, n.gid, n.rdev = d.mode, d.uid, d.gid, d.rdev
        n.data = d.data                  # shared until the next change
        n.target = d.target
        n.entries = {} if d.entries is not None else None
        n.names = set()
        n.nlink = 0
        n.atime, n.mtime, n.ctime, n.btime = d.atime, d.mtime, d.ctime, d.btime
        n.opens = 0
        n.trunc = None
        old = old_nodes.get(ino)
        n.nlookup = old.nlookup if old is not None else 0
        return n

    def recent_ops(self):
        out = []
        tgids = {}
        for (t, pid, op, ino, name, extra) in self.recent:
            path = self.live_path(ino)
            if path is not None and name is not None:
                path = path + b"/" + name if path else name
            item = {"t": round(t, 4), "op": op, "path": None if path is None else path.decode("utf-8", "surrogateescape")}
            if pid:
                if pid not in tgids:
                    tgids[pid] = proc_info(pid)
                item["pid"] = pid
                item.update(tgids[pid])
            if extra is not None:
                p2 = self.live_path(extra[0])
                if p2 is not None:
                    p2 = p2 + b"/" + extra[1] if p2 else extra[1]
                    item["to"] = p2.decode("utf-8", "surrogateescape")
            out.append(item)
        return out

    def stats(self):
        return {"inodes": len(self.nodes), "durable_inodes": len(self.durable), "dirty": len(self.dirty),
                "live_bytes": self.live_bytes, "handles": len(self.handles), "epoch": self.epoch,
                "counts": dict(self.counts)}


def proc_info(pid):
    """The process (thread group) and command of a thread id, while it still exists."""
    out = {}
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("Tgid:"):
                    out["tgid"] = int(line.split()[1])
                elif line.startswith("Name:"):
                    out["comm"] = line.split(None, 1)[1].strip()
    except OSError:
        pass
    return out


def write_atomic(path, text):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.rename(tmp, path)


async def invalidate(inos):
    """Drops the kernel's pages and attributes of these inodes (in a thread: the kernel may wait
    for a read this loop still has to answer)."""
    def work():
        n = 0
        for ino in inos:
            try:
                pyfuse3.invalidate_inode(ino)
                n += 1
            except OSError:
                pass
        return n
    return await trio.to_thread.run_sync(work)


async def serve_control(fs, path, logf, lock):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    sock = trio.socket.socket(trio.socket.AF_UNIX, trio.socket.SOCK_STREAM)
    # Bound aside and renamed into place once listening: whoever sees the path can connect.
    aside = path + ".binding"
    try:
        os.unlink(aside)
    except FileNotFoundError:
        pass
    await sock.bind(aside)
    sock.listen(16)
    os.rename(aside, path)
    listener = trio.SocketListener(sock)

    async def one(stream):
        buf = b""
        async with stream:
            while True:
                try:
                    chunk = await stream.receive_some(65536)
                except trio.BrokenResourceError:
                    return
                if not chunk:
                    return
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    reply = await command(fs, line.decode().strip(), logf, lock)
                    try:
                        await stream.send_all((json.dumps(reply) + "\n").encode())
                    except (trio.BrokenResourceError, trio.ClosedResourceError):
                        return

    await trio.serve_listeners(one, [listener])


async def command(fs, cmd, logf, lock):
    if cmd == "ping":
        return {"ok": True}
    if cmd == "stats":
        return {"ok": True, "stats": fs.stats()}
    if cmd == "recent":
        return {"ok": True, "recent": fs.recent_ops()}
    if cmd == "sync":
        fs.sync_all()
        log(logf, "sync: everything durable")
        return {"ok": True}
    if cmd == "cut":
        async with lock:
            t0 = time.monotonic()
            recent = fs.recent_ops()
            rep, known = fs.cut()
            fs.recent.clear()
            if fs.trace is not None:
                fs.trace.write("%.6f 0 CUT %d\n" % (time.time(), rep["cut"]))
                fs.trace.flush()
            t1 = time.monotonic()
            n = await invalidate(known)
            rep["recent"] = recent
            rep["cut_ms"] = round((t1 - t0) * 1000, 1)
            rep["invalidated"] = n
            log(logf, "cut %d: %d bytes dropped, %d names dropped, %d names back, %d inodes reverted, "
                "%d paths changed, %d stale handles (%.1f ms)" % (
                    rep["cut"], rep["bytes_dropped"], rep["names_dropped"], rep["names_resurrected"],
                    rep["inodes_reverted"], len(rep["changes"]), rep["handles_stale"], rep["cut_ms"]))
            for c in rep["changes"][:200]:
                log(logf, "  %s: %s -> %s" % (c["path"], short(c["before"]), short(c["after"])))
            return dict(ok=True, **rep)
    return {"ok": False, "error": "unknown command %r (ping, sync, cut, stats, recent)" % cmd}


def short(d):
    if d is None:
        return "absent"
    if d["type"] == "file":
        return "file %d bytes %s" % (d["size"], d.get("oid", "?")[:12])
    return d["type"]


def log(logf, msg):
    if logf is not None:
        logf.write("%s %s\n" % (time.strftime("%H:%M:%S"), msg))
        logf.flush()


async def run(fs, args, logf):
    fs.logf = logf
    lock = trio.Lock()
    async with trio.open_nursery() as nursery:
        if args.control:
            nursery.start_soon(serve_control, fs, args.control, logf, lock)

        async def on_signals():
            with trio.open_signal_receiver(signal.SIGUSR1, signal.SIGUSR2) as signals:
                async for sig in signals:
                    await command(fs, "cut" if sig == signal.SIGUSR1 else "sync", logf, lock)
        nursery.start_soon(on_signals)

        if args.commit_interval > 0:
            async def journal():
                while True:
                    await trio.sleep(args.commit_interval)
                    fs.sync_all()
            nursery.start_soon(journal)

        if args.ready:
            write_atomic(args.ready, "%d\n" % os.getpid())
        log(logf, "mounted %s (pid %d)" % (args.mountpoint, os.getpid()))
        await pyfuse3.main(min_tasks=1, max_tasks=1)
        nursery.cancel_scope.cancel()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("mountpoint")
    ap.add_argument("--control", help="Unix socket for commands (ping, sync, cut, stats, recent)")
    ap.add_argument("--ready", help="file written (with cutfs's pid) once the mount is in place")
    ap.add_argument("--log", help="log file (cut reports)")
    ap.add_argument("--commit-interval", type=float, default=0,
                    help="make everything durable (bytes too) every N seconds; 0: never (default)")
    ap.add_argument("--unsynced", choices=("empty", "zeros"), default="empty",
                    help="a file whose name became durable but whose bytes never did: empty (default), "
                    "or its size at that moment in zeros")
    ap.add_argument("--model", choices=("strict", "journal"), default="strict",
                    help="strict (default): only what is fsynced survives, a directory's entries by an fsync of "
                    "that directory; journal: any fsync also commits every name, rename, unlink, truncate and "
                    "size so far (ext4 data=ordered with delayed allocation), file bytes still only by their fsync")
    ap.add_argument("--trace", help="append every operation that changes something (and fsyncs) to this file")
    ap.add_argument("--debug", action="store_true")
    args = ap.parse_args()
    logf = open(args.log, "a") if args.log else None
    trace = open(args.trace, "a", buffering=1 << 16) if args.trace else None
    fs = CutFS(logf, zero_fill=args.unsynced == "zeros", trace=trace, journal=args.model == "journal")
    options = set(pyfuse3.default_options)
    options.add("fsname=cutfs")
    options.add("subtype=cutfs")
    if args.debug:
        options.add("debug")
    pyfuse3.init(fs, args.mountpoint, options)
    try:
        trio.run(run, fs, args, logf)
    except BaseException:
        pyfuse3.close(unmount=True)
        raise
    pyfuse3.close(unmount=False)
    log(logf, "unmounted %s" % args.mountpoint)


if __name__ == "__main__":
    main()
