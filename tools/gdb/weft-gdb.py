# SPDX-License-Identifier: MIT
# weft's fibers in gdb: `info fibers` lists them, `fiber N [COMMAND]` runs a
# gdb command (bt by default) on a parked fiber's stack, from the registers
# its last switch saved. Works on a live process, a core file, and qemu-virt
# through QEMU's gdbstub; x86_64, aarch64 and riscv64.
#
# libweft carries this file in its .debug_gdb_scripts section, so gdb loads it
# with a program linked with weft once its auto-load safe-path allows the
# program (add-auto-load-safe-path DIR). By hand: (gdb) source
# tools/gdb/weft-gdb.py. See docs/debugging.md.
#
# It reads the runtime's own structures (runtime/fiber.h, rt.h, runtime/fiber.c)
# by name, so it follows their renames only as far as the names it knows: a
# field or symbol it cannot find is reported once, by name, and its column
# shows "?" (or the command stops, when nothing can be listed without it).
import struct

import gdb
import gdb.unwinder
from gdb.unwinder import Unwinder

# Slots in one chunk of the fiber table (CHUNK in runtime/fiber.c: a macro,
# absent from the debug information).
TABLE_CHUNK = 4096

_warned = set()


class WeftError(gdb.GdbError):
    pass


def _warn(key, msg):
    if key not in _warned:
        _warned.add(key)
        gdb.write("weft-gdb: %s\n" % msg, gdb.STDERR)


def _field(v, name, need=False):
    """v.name, or None (once reported) when the struct has no such field."""
    try:
        return v[name]
    except gdb.error:
        msg = "%s has no field '%s': tools/gdb/weft-gdb.py does not match this libweft" % (
            v.type.strip_typedefs(),
            name,
        )
        if need:
            raise WeftError("weft-gdb: " + msg)
        _warn(("field", name), msg + " (shown as ?)")
        return None


def _int(v):
    return None if v is None else int(v)


def _static(name, what):
    """The static variable name (what describes it for the message)."""
    try:
        syms = gdb.lookup_static_symbols(name)
    except AttributeError:  # gdb before 10
        syms = [gdb.lookup_static_symbol(name)]
    for s in syms:
        if s is not None and s.is_variable:
            return s.value()
    s = gdb.lookup_global_symbol(name)
    if s is not None:
        return s.value()
    raise WeftError(
        "weft-gdb: no symbol '%s' (%s): is the program linked with weft, with debug information?"
        % (name, what)
    )


def _enum(name, default):
    try:
        return int(gdb.parse_and_eval(name))
    except gdb.error:
        _warn(("enum", name), "no constant %s in the debug information; using %d" % (name, default))
        return default


def _cstr(v, cap=None):
    """A char array or char pointer as text ("" for NULL)."""
    if v is None:
        return "?"
    try:
        if v.type.strip_typedefs().code == gdb.TYPE_CODE_PTR:
            if int(v) == 0:
                return ""
            return v.string(errors="replace", length=cap if cap else -1).split("\0")[0]
        n = v.type.strip_typedefs().sizeof
        raw = bytes(gdb.selected_inferior().read_memory(v.address, n))
        return raw.split(b"\0")[0].decode("utf-8", "replace")
    except (gdb.error, gdb.MemoryError):
        return "<unreadable>"


def fibers():
    """Every fiber in the table (struct weft__fiber values)."""
    chunks = _static("chunks", "the fiber table, runtime/fiber.c")
    nslots = int(_static("nslots", "the fiber table's size, runtime/fiber.c"))
    nchunks = chunks.type.strip_typedefs().range()[1] + 1
    for c in range(nchunks):
        chunk = chunks[c]
        if int(chunk) == 0:
            break
        for i in range(min(TABLE_CHUNK, nslots - c * TABLE_CHUNK)):
            f = _field(chunk[i], "f", need=True)
            if int(f) == 0:
                continue
            f = f.dereference()
            # A free record keeps its slot: its handle then has bit 63 set.
            h = _int(_field(f, "handle", need=True))
            if h != 0 and not h >> 63:
                yield f


def _workers():
    """{address of the fiber each worker runs: worker index}."""
    out = {}
    try:
        rt = _static("weft__rt", "the runtime, runtime/rt.h")
    except WeftError as e:
        _warn("rt", str(e).replace("weft-gdb: ", ""))
        return out
    n = _int(_field(rt, "nworkers"))
    ws = _field(rt, "workers")
    if n is None or ws is None:
        return out
    for i in range(n):
        cur = _field(ws[i], "cur")
        if cur is not None and int(cur) != 0:
            out[int(cur)] = i
    return out


def _cold_name(f, name):
    """A name kept in the fiber's cold block ("" when it has none)."""
    cold = _field(f, "cold")
    if cold is None:
        return "?"
    if int(cold) == 0:
        return ""
    return _cstr(_field(cold.dereference(), name))


class Fiber(object):
    """What `info fibers` shows of one fiber."""

    def __init__(self, f, workers):
        self.f = f
        self.id = _int(_field(f, "handle", need=True))
        self.name = _cold_name(f, "name")
        self.worker = workers.get(int(f.address))
        pw = _int(_field(f, "park"))
        done = _field(f, "done")
        done_state = _int(_field(done, "state")) if done is not None else None
        flags = _int(_field(f, "flags")) or 0
        why = ""
        if done_state is not None and done_state != _enum("FS_PENDING", 0):
            state = "finished"
        elif self.worker is not None:
            state = "running"
        elif pw is None:
            state = "?"
        elif pw & 7 == _enum("PS_PARKED", 2):
            state = "parked"
        elif pw & 7 == _enum("PS_PARKING", 1):
            state = "parking"
        else:
            state = "runnable"
        if state in ("parked", "parking"):
            why = _cstr(_field(f, "wait_why"), 64) or "?"
        if flags & _enum("FF_SERVICE", 2):
            state += " (service)"
        self.state, self.why = state, why
        fl = _field(f, "file")
        line = _int(_field(f, "line"))
        self.site = "%s:%s" % (_cstr(fl) or "?", "?" if line is None else line)
        pid = _int(_field(f, "parent"))
        if pid is None:
            self.parent = "?"
        elif pid == 0:
            self.parent = "thread"
        else:
            self.parent = '%d "%s"' % (pid, _cold_name(f, "parent_name"))


def find(fid):
    workers = _workers()
    for f in fibers():
        if _int(_field(f, "handle", need=True)) == fid:
            return Fiber(f, workers)
    raise WeftError("weft-gdb: no fiber %d (info fibers lists them)" % fid)


class InfoFibers(gdb.Command):
    """List weft's fibers: id, name, state, what a parked one waits on, the
    worker running it, where it was spawned and by which fiber.
Usage: info fibers"""

    def __init__(self):
        super(InfoFibers, self).__init__("info fibers", gdb.COMMAND_STATUS)

    def invoke(self, arg, from_tty):
        workers = _workers()
        rows = [Fiber(f, workers) for f in fibers()]
        if not rows:
            gdb.write("No fibers.\n")
            return
        head = ("Id", "Name", "State", "Waits on", "Worker", "Spawned at", "Parent")
        table = [head] + [
            (
                str(r.id),
                '"%s"' % r.name,
                r.state,
                r.why or "-",
                "-" if r.worker is None else str(r.worker),
                r.site,
                r.parent,
            )
            for r in sorted(rows, key=lambda r: r.id)
        ]
        width = [max(len(row[i]) for row in table) for i in range(len(head) - 1)]
        for row in table:
            cells = [row[i].ljust(width[i]) for i in range(len(head) - 1)] + [row[-1]]
            gdb.write("  ".join(cells).rstrip() + "\n")


def _layout():
    """The frame arch_switch leaves at a switched-out context's saved sp, as
    the program describes it (arch_frame_layout, arch/<cpu>/frame.c): its
    size, the resume address's register and offset, the stack pointer's
    name, and the offset of each callee-saved register gdb needs to unwind."""
    try:
        v = gdb.parse_and_eval("arch_frame_layout")
        regs = v["regs"]
        return {
            "size": int(v["size"]),
            "pc": (v["pc"]["reg"].string(), int(v["pc"]["offset"])),
            "sp": v["sp"].string(),
            "regs": dict(
                (regs[i]["reg"].string(), int(regs[i]["offset"])) for i in range(int(v["nregs"]))
            ),
        }
    except gdb.error as e:
        raise WeftError(
            "weft-gdb: cannot read arch_frame_layout, the saved frame's layout (%s): "
            "a program without libweft's debug information?" % e
        )


class _FrameId(object):
    def __init__(self, sp, pc):
        self.sp, self.pc = sp, pc


class FiberUnwinder(Unwinder):
    """While `fiber N` runs its command: the caller of the selected thread's
    innermost frame is the parked fiber's resume point, with the registers
    its switch saved; gdb unwinds on from there with the debug information.
    (A core file's registers cannot be written: this needs no write.)"""

    def __init__(self):
        super(FiberUnwinder, self).__init__("weft-fiber")
        self.regs = None
        self.sp = None
        self.pc = None
        self.id_sp = 0
        self.used = False

    def __call__(self, pending):
        if self.regs is None:
            return None
        try:
            level = pending.level()
        except AttributeError:  # gdb before 11: the first frame asked is 0
            level = 0 if not self.used else 1
        self.used = True
        if level != 0:
            return None
        # Frame 0 is named by the fiber's saved sp, below its frames: gdb
        # stops a backtrace at a caller whose stack is inner to (below) its
        # callee's, and the fiber's stack is anywhere, not above the thread's.
        sp = pending.read_register(self.sp)
        ui = pending.create_unwind_info(
            _FrameId(gdb.Value(self.id_sp).cast(sp.type), pending.read_register(self.pc))
        )
        for r, v in self.regs.items():
            ui.add_saved_register(r, gdb.Value(v).cast(pending.read_register(r).type))
        return ui


class FiberFrameFilter(object):
    """Hides frame 0 (the thread's own) while `fiber N` runs its command."""

    def __init__(self):
        self.name = "weft-fiber"
        self.priority = 100
        self.enabled = True
        gdb.frame_filters[self.name] = self

    def filter(self, frames):
        if _unwinder.regs is None:
            return frames
        return (f for f in frames if f.inferior_frame().level() != 0)


_unwinder = FiberUnwinder()
gdb.unwinder.register_unwinder(None, _unwinder, replace=True)
FiberFrameFilter()


class FiberCommand(gdb.Command):
    """Run a gdb command on a parked fiber's stack (bt by default).
Usage: fiber ID [COMMAND]
  fiber 3            the backtrace of fiber 3
  fiber 3 bt full    ... with each frame's locals
  fiber 3 frame 4    one frame of it (frames are numbered from 1: frame 0
                     stays the selected thread's own)
The fiber's frames are unwound from the registers its last switch saved,
for this one command; nothing in the program is changed. A running fiber's
frames are its worker thread's (info threads, thread N, bt)."""

    def __init__(self):
        super(FiberCommand, self).__init__("fiber", gdb.COMMAND_STACK)

    def invoke(self, arg, from_tty):
        words = arg.split(None, 1)
        if not words:
            raise WeftError("usage: fiber ID [COMMAND] (info fibers lists the ids)")
        try:
            fid = int(words[0], 0)
        except ValueError:
            raise WeftError("weft-gdb: '%s' is not a fiber id" % words[0])
        command = words[1] if len(words) > 1 else "bt"
        fb = find(fid)
        if fb.state.startswith("running"):
            raise WeftError(
                "weft-gdb: fiber %d is running on worker %d: its frames are that worker's "
                "thread's (info threads, thread N, bt)" % (fid, fb.worker)
            )
        if fb.state.startswith("finished"):
            raise WeftError("weft-gdb: fiber %d has finished: it has no frames" % fid)
        if not fb.state.startswith("parked"):
            gdb.write(
                "weft-gdb: fiber %d is %s: its saved registers may be stale\n" % (fid, fb.state),
                gdb.STDERR,
            )
        ctx = _field(fb.f, "ctx", need=True)
        sp = int(_field(ctx, "sp", need=True))
        layout = _layout()
        mem = bytes(gdb.selected_inferior().read_memory(sp, layout["size"]))
        regs = dict(
            (r, struct.unpack_from("<Q", mem, off)[0]) for r, off in layout["regs"].items()
        )
        pcreg, pcoff = layout["pc"]
        regs[pcreg] = struct.unpack_from("<Q", mem, pcoff)[0]
        regs[layout["sp"]] = sp + layout["size"]
        gdb.write(
            'Fiber %d "%s" (%s%s):\n' % (fid, fb.name, fb.state, ": " + fb.why if fb.why else "")
        )
        _unwinder.sp, _unwinder.pc = layout["sp"], pcreg
        _unwinder.regs, _unwinder.used, _unwinder.id_sp = regs, False, sp
        gdb.invalidate_cached_frames()
        try:
            gdb.execute(command, from_tty)
        finally:
            _unwinder.regs = None
            gdb.invalidate_cached_frames()


InfoFibers()
FiberCommand()
