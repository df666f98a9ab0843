# SPDX-License-Identifier: MIT
"""Where the program's Python code comes from: the interpreter's own facts
about its import path, so that a report can tell the user's code from the
libraries it calls (common/lw-format.h, PYPATH records;
report/symbols/usercode.c decides).

The shim runs facts() inside the program's interpreter, with the GIL held,
once the first Python stack is seen and again when the program's code has
finished; the source is compiled into the shim, so this module needs no
import path.

No code of the program runs: modules are taken from sys.modules as they
are (nothing is imported), module attributes are read from the module's
own dictionary, never through attribute access, which a module's
__getattr__ could answer; only C code and the standard library's own
functions are called (os, site and sysconfig, when already imported).
Files are read only in site directories (the .pth files) and directories
listed (sys.path entries, to find installed distributions); a failure
leaves out the fact it concerns.
"""
import sys

# enum lw_pypath_kind (common/lw-format.h).
STDLIB = 1
SITE = 2
USER_SITE = 3
PYTHONPATH = 4
PTH = 5
EDITABLE = 6
INSTALLED = 7
SYS_PATH = 8
SCRIPT = 9
CWD = 10
PROJECT = 11
SCRIPTS = 12

# What one reading looks at, at most.
MAX_PTH_FILES = 256
MAX_PTH_BYTES = 65536
MAX_LISTED = 4096
MAX_FINDER_ENTRIES = 4096
# Version-control markers of a project's root.
_VCS = (".git", ".hg", ".svn")

_module_type = type(sys)
_function_type = type(lambda: None)
_module_dict = _module_type.__dict__["__dict__"].__get__
_type_mro = type.__dict__["__mro__"].__get__
_dict_get = dict.get
_dict_items = dict.items

# The facts returned since the last fresh start, not returned again.
_seen = set()


def _is_module(m):
    """isinstance(m, ModuleType) by m's real type: isinstance() may read a
    __class__ that the object computes."""
    t = type(m)
    try:
        return t is _module_type or _module_type in _type_mro(t)
    except Exception:
        return False


def _module(name):
    """A module of sys.modules, never imported here; None if absent."""
    modules = sys.modules
    if type(modules) is not dict:
        return None
    m = _dict_get(modules, name)
    return m if _is_module(m) else None


def _global(module, name, kind):
    """A module's global of exactly type kind, from its dictionary."""
    try:
        value = _dict_get(_module_dict(module), name)
    except Exception:
        return None
    return value if type(value) is kind else None


class _Facts(object):
    def __init__(self, os):
        self.os = os
        self.path = os.path
        self.cwd = os.getcwd()
        self.found = []

    def absolute(self, p):
        if type(p) is not str or "\0" in p:
            return None
        return self.path.normpath(self.path.join(self.cwd, p))

    def add(self, kind, p, name=""):
        """Records p (made absolute), and its real path when it differs."""
        p = self.absolute(p)
        if p is None or type(name) is not str or "\0" in name:
            return None
        self.found.append((kind, p, name))
        try:
            real = self.path.realpath(p)
        except Exception:
            real = p
        if real != p:
            self.found.append((kind, real, name))
        return p

    def under(self, p, roots):
        return any(p == r or p.startswith(r.rstrip("/") + "/") for r in roots)

    def listdir(self, d):
        try:
            return self.os.listdir(d)[:MAX_LISTED]
        except Exception:
            return []


def _stdlib_and_site(f):
    """The standard library's, the site directories' and the scripts'
    directories; returns (stdlib, site dirs)."""
    stdlib, sites = [], []
    os_file = _global(f.os, "__file__", str)
    if os_file:
        stdlib.append(f.add(STDLIB, f.path.dirname(os_file)))
    sysconfig = _module("sysconfig")
    get = _global(sysconfig, "get_paths", _function_type) if sysconfig \
        else None
    # Only once its variables are read: reading them imports a module
    # (_sysconfigdata), through the program's own finders.
    if get and (_global(sysconfig, "_CONFIG_VARS", dict) is None or
                _global(sysconfig, "_CONFIG_VARS_INITIALIZED", bool)
                is False):
        get = None
    if get:
        try:
            paths = get()
        except Exception:
            paths = {}
        for key, kind in (("stdlib", STDLIB), ("platstdlib", STDLIB),
                          ("purelib", SITE), ("platlib", SITE),
                          ("scripts", SCRIPTS)):
            p = f.add(kind, _dict_get(paths, key)) if type(paths) is dict \
                else None
            if p and kind == STDLIB:
                stdlib.append(p)
            elif p and kind == SITE:
                sites.append(p)
    executable = sys.executable
    if type(executable) is str and executable:
        f.add(SCRIPTS, f.path.dirname(executable))
    site = _module("site")
    if site:
        get = _global(site, "getsitepackages", _function_type)
        try:
            listed = get() if get else []
        except Exception:
            listed = []
        for p in listed if type(listed) is list else ():
            p = f.add(SITE, p)
            if p:
                sites.append(p)
        get = _global(site, "getusersitepackages", _function_type)
        try:
            p = f.add(USER_SITE, get()) if get else None
        except Exception:
            p = None
        if p:
            sites.append(p)
    return [p for p in stdlib if p], sites


def _pth(f, sites):
    """The directories the site directories' .pth files add; {path: kind}."""
    added, files = {}, 0
    for site in sites:
        for name in sorted(f.listdir(site)):
            if type(name) is not str or not name.endswith(".pth"):
                continue
            files += 1
            if files > MAX_PTH_FILES:
                return added
            try:
                with open(f.path.join(site, name), "rb") as stream:
                    text = stream.read(MAX_PTH_BYTES)
            except Exception:
                continue
            text = text.decode("utf-8", "surrogateescape")
            kind = EDITABLE if name.startswith("__editable__") else PTH
            for line in text.splitlines():
                line = line.rstrip()
                if not line or line.startswith("#") or \
                        line.startswith(("import ", "import\t")):
                    continue
                p = f.absolute(f.path.join(site, line))
                if p and f.path.isdir(p):
                    f.add(kind, p, name)
                    added[p] = kind
    return added


def _editable_finders(f):
    """The packages setuptools' editable finders map to their sources."""
    modules = sys.modules
    if type(modules) is not dict:
        return
    for name, module in list(_dict_items(modules)):
        if type(name) is not str or not name.startswith("__editable___") \
                or not name.endswith("_finder") or not _is_module(module):
            continue
        mapping = _global(module, "MAPPING", dict)
        for package, p in list(_dict_items(mapping or {}))[:MAX_FINDER_ENTRIES]:
            if type(package) is str and type(p) is str:
                f.add(EDITABLE, p, package)


def _sys_path(f, stdlib, sites, pth):
    """Each sys.path entry, by where it came from."""
    env = []
    posix = _module("posix")
    environ = _global(posix, "environ", dict) if posix else None
    if environ and not sys.flags.ignore_environment:
        value = _dict_get(environ, b"PYTHONPATH", b"")
        if type(value) is bytes:
            env = [f.absolute(f.os.fsdecode(p)) for p in value.split(b":")
                   if p]
    paths = sys.path
    for entry in list(paths) if type(paths) is list else ():
        p = f.absolute(entry)
        if p is None or p in sites or p in pth:
            continue
        if f.under(p, stdlib) or (p.endswith(".zip") and
                                  f.path.basename(p).startswith("python")):
            f.add(STDLIB, p)
            continue
        known = False
        if p in env:
            f.add(PYTHONPATH, p)
            known = True
        if f.path.isdir(p) and any(
                type(n) is str and n.endswith(".dist-info")
                for n in f.listdir(p)):
            f.add(INSTALLED, p)
            known = True
        if not known:
            f.add(SYS_PATH, p)


def _project(f, base, name):
    """The root of the version-controlled tree that holds base."""
    try:
        home = f.path.expanduser("~")
    except Exception:
        home = None
    d = base
    for _ in range(64):
        if d in ("/", home):
            return
        if any(f.path.exists(f.path.join(d, marker)) for marker in _VCS):
            f.add(PROJECT, d, name)
            return
        parent = f.path.dirname(d)
        if parent == d:
            return
        d = parent


def _gather(os):
    f = _Facts(os)
    stdlib, sites = _stdlib_and_site(f)
    pth = _pth(f, sites)
    _editable_finders(f)
    _sys_path(f, stdlib, sites, pth)
    main = _module("__main__")
    script = _global(main, "__file__", str) if main else None
    script = f.add(SCRIPT, script) if script else None
    f.add(CWD, f.cwd)
    if script:
        _project(f, f.path.dirname(script), "script")
    _project(f, f.cwd, "cwd")
    return f.found


def facts(fresh):
    """[(kind, path, name)] of the facts not returned before (since the
    last fresh call), paths and names as bytes (os.fsencode)."""
    if fresh:
        _seen.clear()
    os = _module("os")
    if os is None:
        return []
    try:
        found = _gather(os)
    except Exception:
        return []
    out = []
    for kind, p, name in found:
        if (kind, p, name) in _seen:
            continue
        _seen.add((kind, p, name))
        try:
            out.append((kind, os.fsencode(p), os.fsencode(name)))
        except Exception:
            continue
    return out
