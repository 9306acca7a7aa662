"""What common commands do to files: which of their words are paths they write, paths they read, and
which options run other programs. The permission gate puts every path found here through the same
outside-scope and protected-path checks as a redirection; an option that runs code makes the line ask.

A command in this table is never given a bare prefix rule by an "always" answer (`Bash(cp:*)` would also
allow `cp x .git/hooks/`); the exact command is stored instead.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from tools.shell_words import UNKNOWN, Word


@dataclass(frozen=True)
class FileUse:
    word: Word  # the path as bash computes it; unknown when only the running shell knows it
    access: str  # "write", "read", "tree" (a recursive write or delete below it), "link" (creates a link)


@dataclass
class Effects:
    files: list[FileUse] = field(default_factory=list)
    runs_code: list[str] = field(default_factory=list)  # why an option makes the command run other code

    def write(self, word: Word, access: str = "write") -> None:
        self.files.append(FileUse(word, access))

    def read(self, word: Word) -> None:
        self.files.append(FileUse(word, "read"))


@dataclass
class Options:
    opts: list[tuple[str, Word | None]] = field(default_factory=list)  # (option name, its argument)
    pos: list[Word] = field(default_factory=list)

    def has(self, *names: str) -> bool:
        return any(n in names for n, _ in self.opts)

    def values(self, *names: str) -> list[Word]:
        return [v for n, v in self.opts if n in names and v is not None]


def parse_options(args: list[Word], short_args: str = "", long_args: str = "") -> Options:
    """getopt-style: `-abc`, `-oFILE`, `-o FILE`, `--long=x`, `--long x` (for `long_args`), `--`."""
    longs = set(long_args.split())
    out = Options()
    i, ended = 0, False
    while i < len(args):
        word = args[i]
        w = word.value
        i += 1
        if ended or w is None or not w.startswith("-") or w == "-" or word.glob:
            out.pos.append(word)
            continue
        if w == "--":
            ended = True
        elif w.startswith("--"):
            name, eq, value = w.partition("=")
            if eq:
                out.opts.append((name, Word(value)))
            elif name in longs:
                out.opts.append((name, args[i] if i < len(args) else UNKNOWN))
                i += 1
            else:
                out.opts.append((name, None))
        else:
            i = _short(w, args, i, short_args, out)
    return out


def _short(w: str, args: list[Word], i: int, short_args: str, out: Options) -> int:
    for k, c in enumerate(w[1:], start=1):
        if c in short_args:
            if k + 1 < len(w):
                out.opts.append(("-" + c, Word(w[k + 1:])))
                return i
            out.opts.append(("-" + c, args[i] if i < len(args) else UNKNOWN))
            return i + 1
        out.opts.append(("-" + c, None))
    return i


# -- the table ------------------------------------------------------------------------------------


def _copy_like(args: list[Word], e: Effects, short: str, long: str, link: bool = False) -> Options:
    """cp / mv / install / ln: the destination (or -t DIR) and DEST/basename(source) are written."""
    o = parse_options(args, short, long)
    targets = o.values("-t", "--target-directory")
    sources = o.pos if targets else o.pos[:-1]
    dests = targets or o.pos[-1:]
    if not dests:
        e.write(UNKNOWN)
    parents = o.has("--parents")  # `cp --parents a/.git/x dir` writes dir/a/.git/x
    for d in dests:
        e.write(d, "link" if link else "write")
        for s in sources:
            if d.value is not None and s.value is not None:
                tail = s.value.lstrip("/") if parents else s.value.rstrip("/").rsplit("/", 1)[-1]
                e.write(Word(d.value.rstrip("/") + "/" + tail, d.glob or s.glob), "link" if link else "write")
            else:
                e.write(UNKNOWN)
    return o


def _cp(args: list[Word], e: Effects) -> None:
    o = _copy_like(args, e, "St", "--suffix --target-directory --backup --sparse --reflink --preserve")
    if o.has("-s", "--symbolic-link", "-l", "--link", "-r", "-R", "--recursive", "-a", "--archive", "-P",
             "--no-dereference", "-d"):
        e.files[:] = [FileUse(f.word, "link") for f in e.files]  # makes links, or copies them as links
    if o.has("-r", "-R", "--recursive", "-a", "--archive"):
        for d in o.values("-t", "--target-directory") or o.pos[-1:]:
            e.write(d, "tree")  # a copied tree may bring a `.git/` or `.claude/` with it


def _mv(args: list[Word], e: Effects) -> None:
    o = _copy_like(args, e, "St", "--suffix --target-directory --backup", link=True)  # a moved link stays one
    for s in (o.pos if o.values("-t", "--target-directory") else o.pos[:-1]):
        e.write(s, "link")  # moved away: whatever was there (a link, a directory) now lives elsewhere


def _install(args: list[Word], e: Effects) -> None:
    o = parse_options(args, "gmoStTC", "--group --mode --owner --suffix --target-directory --strip-program")
    if o.has("-d", "--directory"):
        for p in o.pos:
            e.write(p)
        return
    if o.has("--strip-program"):
        e.runs_code.append("install --strip-program runs a program")
    _copy_like(args, e, "gmoStTC", "--group --mode --owner --suffix --target-directory --strip-program")


def _ln(args: list[Word], e: Effects) -> None:
    """The link, and what it points at: a write through it later writes there (a hard link shares the
    file itself), so a link to a place outside the project or to a protected path asks now."""
    o = _copy_like(args, e, "St", "--suffix --target-directory --backup", link=True)
    targets = o.values("-t", "--target-directory")
    sources = o.pos if targets else o.pos[:-1]
    dests = targets or o.pos[-1:]
    symbolic = o.has("-s", "--symbolic")
    for s in sources:
        e.write(s)
        if symbolic and s.value is not None and not s.value.startswith("/"):
            for d in dests:  # a relative link target is relative to the link's own directory
                base = d.value.rstrip("/") if d.value is not None else None
                e.write(UNKNOWN if base is None else Word(f"{base}/{s.value}", d.glob or s.glob))
                if base is not None and "/" in base:
                    e.write(Word(f"{base.rsplit('/', 1)[0]}/{s.value}", d.glob or s.glob))


def _all_positionals(access: str, short: str = "", long: str = "", skip: int = 0,
                     tree_opts: tuple[str, ...] = ()) -> Callable[[list[Word], Effects], None]:
    def handler(args: list[Word], e: Effects) -> None:
        o = parse_options(args, short, long)
        mode = "tree" if tree_opts and o.has(*tree_opts) else access
        for p in o.pos[skip:]:
            e.files.append(FileUse(p, mode))
        for r in o.values("-r", "--reference"):
            e.read(r)
    return handler


def _option_paths(write: tuple[str, ...], short: str, long: str, read: tuple[str, ...] = (),
                  positional: str = "read") -> Callable[[list[Word], Effects], None]:
    def handler(args: list[Word], e: Effects) -> None:
        o = parse_options(args, short, long)
        for w in o.values(*write):
            e.write(w)
        for r in o.values(*read):
            e.read(r)
        if positional == "write":
            for p in o.pos:
                e.write(p)
    return handler


def _sort(args: list[Word], e: Effects) -> None:
    o = parse_options(args, "kotTS", "--output --key --field-separator --temporary-directory --buffer-size "
                                      "--files0-from --compress-program --random-source")
    for w in o.values("-o", "--output"):
        e.write(w)
    for r in o.values("--files0-from", "--random-source"):
        e.read(r)
    if o.has("--compress-program"):
        e.runs_code.append("sort --compress-program runs a program")


def _dd(args: list[Word], e: Effects) -> None:
    for a in args:
        if a.value is None:
            e.write(UNKNOWN)
        elif a.value.startswith("of="):
            e.write(Word(a.value[3:], a.glob))
        elif a.value.startswith("if="):
            e.read(Word(a.value[3:], a.glob))


def _uniq(args: list[Word], e: Effects) -> None:
    o = parse_options(args, "fsw", "--skip-fields --skip-chars --check-chars --group --all-repeated")
    if len(o.pos) > 1:
        e.write(o.pos[1])


def _split(args: list[Word], e: Effects) -> None:
    o = parse_options(args, "abCln", "--suffix-length --additional-suffix --bytes --line-bytes --lines "
                                    "--number --separator --filter")
    if o.has("--filter"):
        e.runs_code.append("split --filter runs a shell command")
    prefix = o.pos[1] if len(o.pos) > 1 else Word("x")
    e.write(Word((prefix.value or "") + "*", True) if prefix.value is not None else UNKNOWN)


def _rsync(args: list[Word], e: Effects) -> None:
    o = parse_options(args, "eBfMT", "--rsh --rsync-path --files-from --filter --exclude-from --include-from "
                                     "--temp-dir --backup-dir --log-file --write-batch --only-write-batch "
                                     "--read-batch --password-file --partial-dir --compare-dest --copy-dest "
                                     "--link-dest --chmod --chown")
    if o.has("-e", "--rsh", "--rsync-path"):
        e.runs_code.append("rsync -e/--rsync-path runs a program")
    for w in o.values("--log-file", "--write-batch", "--only-write-batch", "--backup-dir", "--temp-dir",
                      "--partial-dir"):
        e.write(w)
    for r in o.values("--files-from", "--exclude-from", "--include-from", "--read-batch", "--password-file"):
        e.read(r)
    if o.pos:
        e.write(o.pos[-1], "tree")
        if o.has("-a", "--archive", "-l", "--links"):
            e.write(o.pos[-1], "link")
    for s in o.pos[:-1]:
        e.read(s)
    if o.has("--remove-source-files"):
        for s in o.pos[:-1]:
            e.write(s, "tree")


def _patch(args: list[Word], e: Effects) -> None:
    o = parse_options(args, "BdDFiopVrYzg", "--directory --input --output --reject-file --prefix --basename-prefix "
                                             "--suffix --backup --version-control --define")
    outputs = o.values("-o", "--output")
    for w in outputs:
        e.write(w)
    for r in o.values("-i", "--input"):
        e.read(r)
    if not outputs or o.pos:
        e.write(UNKNOWN)  # the patch names the files it changes



_SAFE_SED = re.compile(
    r"\s*(?:(?:(?:\d+|\$|/(?:[^/\\\n]|\\.)*/)(?:,(?:\d+|\$|/(?:[^/\\\n]|\\.)*/))?\s*!?\s*)?"
    r"(?:[pdqPDnNgGhHxl=]|s(.)(?:(?!\1)[^\\\n]|\\.)*\1(?:(?!\1)[^\\\n]|\\.)*\1[gpiImM0-9]*"
    r"|y(.)(?:(?!\2)[^\\\n]|\\.)*\2(?:(?!\2)[^\\\n]|\\.)*\2)?\s*(?:[;\n]|\Z))*\Z")


def _sed(args: list[Word], e: Effects) -> None:
    """`sed -i` writes its files; a script outside a small safe grammar (`e`, `w FILE`, `s///e`, `r FILE`)
    may run commands or touch files."""
    o = parse_options(args, "efl", "--expression --file --line-length --in-place")
    scripts = o.values("-e", "--expression")
    files = o.pos if scripts else o.pos[1:]
    if not scripts and o.pos:
        scripts = [o.pos[0]]
    if o.has("-f", "--file") or not scripts:
        e.runs_code.append("sed runs a script the text does not show")
    for s in scripts:
        if s.value is None or not _SAFE_SED.match(s.value):
            e.runs_code.append("the sed script may run commands or write files (e, w, r or a form not checked)")
            break
    if o.has("-i", "--in-place") or any(n.startswith("--in-place") for n, _ in o.opts):
        for f in files:
            e.write(f)


def _awk(args: list[Word], e: Effects) -> None:
    o = parse_options(args, "fvFEil", "--file --assign --field-separator --include --load --exec --source")
    programs = o.values("--source", "-e") or o.pos[:1]
    if o.has("-f", "--file", "-E", "--exec", "-i", "--include", "-l", "--load") or not programs:
        e.runs_code.append("awk runs a program file the text does not show")
    for p in programs:
        text = p.value
        if text is None or re.search(r"system|\||getline|@|ENVIRON|PROCINFO", text) or (
                ">" in text and "print" in text):
            e.runs_code.append("the awk program may run commands or write files")
            break


_TAR_ARG = "fCbgHIKLNTVXF"
_TAR_LONG = ("--file --directory --to-command --use-compress-program --checkpoint-action --info-script "
             "--new-volume-script --rsh-command --exclude --files-from --exclude-from --transform --xform "
             "--owner --group --mode --mtime --newer --after-date --label --format --index-file --volno-file "
             "--rmt-command --blocking-factor --record-size --tape-length --starting-file --newer-mtime")


def _tar(args: list[Word], e: Effects) -> None:
    if args and args[0].value and re.fullmatch(r"[A-Za-z]+", args[0].value):
        args = [Word("-" + args[0].value), *args[1:]]  # `tar xzf a.tgz`: old-style letters
    o = parse_options(args, _TAR_ARG, _TAR_LONG)
    runs = ("--to-command", "--use-compress-program", "-I", "--checkpoint-action", "--info-script", "-F",
            "--new-volume-script", "--rsh-command", "--rmt-command")
    if o.has(*runs):
        e.runs_code.append("tar --to-command/--checkpoint-action/-I/-F runs a program")
    archives = o.values("-f", "--file")
    if any(a.value is None or ":" in a.value for a in archives) and not o.has("--force-local"):
        e.runs_code.append("a tar archive named host:path runs a remote shell")
    create = o.has("-c", "--create", "-r", "--append", "-u", "--update", "-A", "--catenate", "--concatenate")
    for a in archives:
        (e.write if create else e.read)(a)
    for w in o.values("--index-file", "--volno-file"):
        e.write(w)
    for r in o.values("-T", "--files-from", "-X", "--exclude-from"):
        e.read(r)
    if o.has("-x", "--extract", "--get"):
        base = (o.values("-C", "--directory") or [Word(".")])[-1]
        e.write(base, "tree")
        if not o.has("-O", "--to-stdout"):
            e.write(UNKNOWN)  # the archive names the files it writes (and links it writes through)


def _unzip(args: list[Word], e: Effects) -> None:
    o = parse_options(args, "dxP", "")
    if o.has("-l", "-t", "-v", "-p", "-Z", "-z"):
        return
    e.write((o.values("-d") or [Word(".")])[-1], "tree")
    e.write(UNKNOWN)  # the archive names the files it writes


def _zip(args: list[Word], e: Effects) -> None:
    o = parse_options(args, "bnOtxiPZ", "--unzip-command --temp-path --output-file --out --password --exclude "
                                       "--include --names-stdin --suffixes --logfile-path --comment")
    if o.has("-TT", "--unzip-command") or any(a.value and a.value.startswith("-TT") for a in args):
        e.runs_code.append("zip -TT/--unzip-command runs a program")
    for w in o.values("--out", "-O", "--logfile-path"):
        e.write(w)
    if o.pos:
        e.write(o.pos[0])
    if o.has("-m", "--move"):
        for p in o.pos[1:]:
            e.write(p, "tree")


def _find(args: list[Word], e: Effects) -> None:
    starts = []
    for a in args:
        if a.value is not None and (a.value.startswith("-") or a.value in ("(", "!", ")")):
            break
        starts.append(a)
    for i, a in enumerate(args):
        v = a.value
        nxt = args[i + 1] if i + 1 < len(args) else UNKNOWN
        if v in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            e.write(nxt)
        elif v == "-delete":
            for s in starts or [Word(".")]:
                e.write(s, "tree")
        elif v in ("-exec", "-execdir", "-ok", "-okdir"):
            e.runs_code.append(f"find {v} runs a command on each file")


_CURL_LONG = ("--output --output-dir --dump-header --cookie-jar --trace --trace-ascii --stderr --libcurl "
              "--config --upload-file --data --data-binary --data-urlencode --data-raw --form --etag-save "
              "--hsts --alt-svc --netrc-file --cookie --write-out --proxy-header --header --user --url")


def _curl(args: list[Word], e: Effects) -> None:
    o = parse_options(args, "oDcTKdFbHuxXAeEw", _CURL_LONG)
    for w in o.values("-o", "--output", "-D", "--dump-header", "-c", "--cookie-jar", "--trace", "--trace-ascii",
                      "--stderr", "--libcurl", "--etag-save", "--hsts", "--alt-svc", "--output-dir"):
        e.write(w)
    for r in o.values("-T", "--upload-file", "-K", "--config", "--netrc-file"):
        e.read(r)
    if o.has("-K", "--config"):
        e.runs_code.append("curl --config takes options from a file the text does not show")
    if o.has("-J", "--remote-header-name"):
        e.write(UNKNOWN)  # the server names the file
    elif o.has("-O", "--remote-name", "--remote-name-all"):
        base = (o.values("--output-dir") or [Word(".")])[-1]
        for url in o.pos + o.values("--url"):
            e.write(_url_file(base, url))
    for d in o.values("-d", "--data", "--data-binary", "--data-urlencode", "-F", "--form", "-b", "--cookie",
                      "-H", "--header"):
        m = re.search(r"[@<]([^;,]+)", d.value or "@")
        if m:
            e.read(Word(m.group(1), d.glob) if d.value is not None else UNKNOWN)


def _url_file(base: Word, url: Word) -> Word:
    """The file a download names after its URL: the last path segment (`index.html` when empty)."""
    if url.value is None or base.value is None:
        return UNKNOWN
    path = re.sub(r"^[a-z][a-z0-9+.-]*://[^/]*", "", url.value, flags=re.I).split("?", 1)[0].split("#", 1)[0]
    name = path.rsplit("/", 1)[-1] or "index.html"
    return Word(f"{base.value.rstrip('/')}/{name}", url.glob or base.glob)


def _wget(args: list[Word], e: Effects) -> None:
    o = parse_options(args, "OoaPiDeUTtwQYlAIRXB", "--output-document --output-file --append-output "
                      "--directory-prefix --input-file --execute --post-file --body-file --load-cookies "
                      "--save-cookies --use-askpass --warc-file --config --ca-certificate --certificate "
                      "--private-key --header --user-agent --tries --timeout --wait --level")
    for w in o.values("-O", "--output-document", "-o", "--output-file", "-a", "--append-output",
                      "--save-cookies", "--warc-file"):
        e.write(w)
    for w in o.values("-P", "--directory-prefix"):
        e.write(w, "tree")
    for r in o.values("-i", "--input-file", "--post-file", "--body-file", "--load-cookies", "--config",
                      "--certificate", "--private-key"):
        e.read(r)
    if o.has("-e", "--execute", "--use-askpass", "--config"):
        e.runs_code.append("wget -e/--use-askpass/--config runs commands the text does not show")
    if o.values("-O", "--output-document"):
        return
    if o.has("-r", "--recursive", "-m", "--mirror", "-x", "--force-directories", "--content-disposition",
              "-p", "--page-requisites", "-i", "--input-file"):
        e.write(UNKNOWN)  # the server names the files
        return
    base = (o.values("-P", "--directory-prefix") or [Word(".")])[-1]
    for url in o.pos:
        e.write(_url_file(base, url))


def _printf(args: list[Word], e: Effects) -> None:
    o = parse_options(args, "v", "")
    for v in o.values("-v"):
        if v.value is None or not re.fullmatch(r"[A-Za-z_]\w*", v.value):
            e.runs_code.append("printf -v with a subscript evaluates it (and may run commands)")


def _rg(args: list[Word], e: Effects) -> None:
    o = parse_options(args, "egfAtTBCjmMrEg", "--pre --pre-glob --regexp --file --ignore-file --type-add "
                                              "--replace --max-count --context --engine --sort --threads")
    if o.has("--pre", "-z", "--search-zip"):
        e.runs_code.append("rg --pre/--search-zip runs a program on each file")


def _time(args: list[Word], e: Effects) -> None:
    from tools.shell_wrappers import WRAPPERS, _command_start

    end = _command_start([Word("time"), *args], WRAPPERS["time"])
    o = parse_options(args[:(end or 1) - 1], "of", "--output --format")
    for w in o.values("-o", "--output"):
        e.write(w)


def _strace(args: list[Word], e: Effects) -> None:
    o = parse_options(args, "abeEIoOpPsSuUX", "--output")
    for w in o.values("-o", "--output"):
        e.write(w)


def _ssh(args: list[Word], e: Effects) -> None:
    o = parse_options(args, "oFSiIJlLpRDbcEeKmOQWw", "")
    opts = " ".join(v.value or "" for v in o.values("-o")).lower()
    if any(k in opts for k in ("proxycommand", "localcommand", "permitlocalcommand", "knownhostscommand",
                               "match", "include")) or o.has("-F", "-S", "-J"):
        e.runs_code.append("ssh/scp -o ProxyCommand/LocalCommand, -F, -S or -J may run a program")
    for r in o.values("-i", "-F"):
        e.read(r)


def _script(args: list[Word], e: Effects) -> None:
    o = parse_options(args, "cEIOBTm", "--command --log-in --log-out --log-io --log-timing --echo")
    e.write(o.pos[0] if o.pos else Word("typescript"))
    for w in o.values("-I", "-O", "-B", "-T", "--log-in", "--log-out", "--log-io", "--log-timing"):
        e.write(w)


def _extract(args: list[Word], e: Effects) -> None:
    """7z, cpio, ar, jar: extracting writes the files the archive names."""
    words = [a.value for a in args]
    if any(w is None or w in ("x", "e", "xf", "xvf", "-x", "-i", "-id", "-idv", "-ivd", "--extract") or
           (w.startswith("-") and "i" in w and not w.startswith("--")) for w in words[:3]):
        e.write(UNKNOWN)


def _xargs(args: list[Word], e: Effects) -> None:
    o = parse_options(args, "aEdILnPs", "--arg-file")
    for r in o.values("-a", "--arg-file"):
        e.read(r)


# -- git ----------------------------------------------------------------------------------------------

# `git -c` keys known to change only how output looks; any other key may run a program (core.fsmonitor,
# core.pager, core.sshCommand, *.textconv, filter.*, diff.external, gpg.program, alias.*, core.hooksPath, ...).
_SAFE_GIT_KEY = re.compile(
    r"(color\..*|advice\..*|user\.(name|email)|core\.(quotepath|abbrev|autocrlf|safecrlf|ignorecase|filemode)"
    r"|init\.defaultbranch|diff\.(noprefix|renames|mnemonicprefix|context|colormoved)|log\.(date|decorate"
    r"|abbrevcommit)|status\.(short|branch|showuntrackedfiles)|column\.ui|merge\.conflictstyle|i18n\..*)\Z", re.I)
_GIT_GLOBAL = "Cc"
_GIT_GLOBAL_LONG = "--git-dir --work-tree --namespace --exec-path --config-env --super-prefix --list-cmds"
_GIT_RUNS = {
    "grep": ("-O", "--open-files-in-pager"),
    "clone": ("-u", "--upload-pack", "--template"),
    "fetch": ("--upload-pack",), "pull": ("--upload-pack",), "ls-remote": ("--upload-pack",),
    "push": ("--receive-pack", "--exec"), "archive": ("--exec",), "rebase": ("-x", "--exec"),
    "diff": ("--ext-diff", "--textconv"), "log": ("--ext-diff", "--textconv", "--show-signature"),
    "show": ("--ext-diff", "--textconv", "--show-signature"), "init": ("--template",),
}
_GIT_ALWAYS_RUNS = frozenset({"difftool", "mergetool", "filter-branch", "filter-repo", "bisect", "submodule",
                              "credential", "web--browse", "instaweb", "daemon", "send-email", "p4", "svn",
                              "cvsimport", "cvsserver", "upload-pack", "receive-pack", "shell", "var", "hook"})


def _git(args: list[Word], e: Effects) -> None:
    i, chdir = 0, None
    while i < len(args) and args[i].value is not None and args[i].value.startswith("-"):  # type: ignore[union-attr]
        w = args[i].value or ""
        nxt = args[i + 1] if i + 1 < len(args) else UNKNOWN
        if w in ("-c", "--config-env") or w.startswith("--config-env="):
            key = (nxt.value or "").split("=", 1)[0] if w == "-c" else ""
            if not _SAFE_GIT_KEY.match(key):
                e.runs_code.append(f"git {w} {key or '...'} may run a program")
        elif w.startswith(("--exec-path", "--git-dir", "--work-tree")) or w in ("-p", "--paginate"):
            e.runs_code.append(f"git {w.split('=')[0]} runs programs from another place or configuration")
        if w == "-C":
            chdir = nxt
        i += 2 if w in ("-c", "-C", "--git-dir", "--work-tree", "--namespace", "--config-env") else 1
    if i >= len(args):
        return
    sub, rest = args[i].value, args[i + 1:]
    if sub is None:
        e.runs_code.append("the git sub-command is only known when it runs")
        return
    sub_effects = Effects()
    _git_sub(sub, rest, sub_effects)
    e.runs_code.extend(sub_effects.runs_code)
    for f in sub_effects.files:
        e.files.append(FileUse(_under(chdir, f.word), f.access))


def _under(chdir: Word | None, w: Word) -> Word:
    if chdir is None or w.value is None or w.value.startswith("/"):
        return w
    if chdir.value is None:
        return UNKNOWN
    return Word(chdir.value.rstrip("/") + "/" + w.value, w.glob or chdir.glob)


def _git_sub(sub: str, rest: list[Word], e: Effects) -> None:
    o = parse_options(rest, "oOxuCcS", "--output --output-directory --exec --upload-pack --receive-pack "
                                         "--template --config --separate-git-dir --directory")
    if sub in _GIT_ALWAYS_RUNS:
        e.runs_code.append(f"git {sub} runs programs")
    if o.has(*_GIT_RUNS.get(sub, ())):
        e.runs_code.append(f"git {sub} {'/'.join(_GIT_RUNS[sub])} runs a program")
    if any(p.value is None or p.value.startswith(("ext::", "fd::")) for p in o.pos) and sub in (
            "clone", "fetch", "pull", "push", "ls-remote", "archive", "submodule"):
        e.runs_code.append("a git remote of the ext:: kind runs a command")
    for w in o.values("--output", "--output-directory") + (o.values("-o") if sub in ("format-patch", "archive") else []):
        e.write(w, "tree" if sub == "format-patch" else "write")
    if sub == "config":
        _git_config(rest, e)
    elif sub == "diff" and o.has("--no-index"):
        for p in o.pos:
            e.read(p)
    elif sub == "clone":
        for v in o.values("-c", "--config"):
            if not _SAFE_GIT_KEY.match((v.value or "").split("=", 1)[0]):
                e.runs_code.append("git clone --config of a key that may run a program")
        e.write(o.pos[1] if len(o.pos) > 1 else _clone_dir(o.pos[0] if o.pos else UNKNOWN), "tree")
    elif sub in ("worktree", "bundle") and len(o.pos) > 1 and o.pos[0].value in ("add", "create"):
        e.write(o.pos[1], "tree")
    elif sub == "init" and o.pos:
        e.write(o.pos[-1], "tree")
    elif sub == "apply" and o.has("--unsafe-paths", "--directory"):
        e.write(UNKNOWN)


def _clone_dir(url: Word) -> Word:
    """The directory `git clone URL` makes: the URL's last segment without `.git`."""
    if url.value is None:
        return UNKNOWN
    name = url.value.rstrip("/").rsplit("/", 1)[-1].rsplit(":", 1)[-1]
    return Word(name[:-4] if name.endswith(".git") else name, url.glob)


def _git_config(rest: list[Word], e: Effects) -> None:
    """Setting a key writes a configuration file (the repository's is protected); `--edit` runs an editor."""
    import os.path

    o = parse_options(rest, "f", "--file --type --default --comment --value")
    words = [p.value for p in o.pos]
    new_style_set = words[:1] in (["set"], ["unset"], ["rename-section"], ["remove-section"], ["edit"])
    sets = o.has("--add", "--unset", "--unset-all", "--replace-all", "--rename-section", "--remove-section",
                 "-e", "--edit") or new_style_set or (len(words) >= 2 and words[0] not in ("get", "list"))
    if o.has("-e", "--edit") or words[:1] == ["edit"]:
        e.runs_code.append("git config --edit runs an editor")
    if None in words:
        e.write(UNKNOWN)
    if not sets:
        return
    if o.has("--global"):
        e.write(Word(os.path.expanduser("~/.gitconfig")))
    elif o.has("--system"):
        e.write(Word("/etc/gitconfig"))
    elif o.values("-f", "--file"):
        e.write(o.values("-f", "--file")[0])
    else:
        e.write(Word(".git/config"))


# -- the entry point ----------------------------------------------------------------------------------

_SUBSCRIPT_BUILTINS = frozenset({"test", "[", "let", "unset", "declare", "typeset", "local", "export", "readonly",
                                 "read", "mapfile", "readarray", "wait", "printf"})

TABLE: dict[str, Callable[[list[Word], Effects], None]] = {
    "cp": _cp, "mv": _mv, "install": _install, "ln": _ln, "dd": _dd, "uniq": _uniq, "split": _split,
    "rsync": _rsync, "patch": _patch, "sed": _sed, "gsed": _sed, "awk": _awk, "gawk": _awk, "mawk": _awk,
    "nawk": _awk, "tar": _tar, "gtar": _tar, "bsdtar": _tar, "unzip": _unzip, "zip": _zip, "find": _find,
    "curl": _curl, "wget": _wget, "printf": _printf, "rg": _rg, "git": _git, "time": _time, "strace": _strace,
    "xargs": _xargs, "ssh": _ssh, "scp": _ssh, "sftp": _ssh, "script": _script, "7z": _extract, "7za": _extract,
    "7zz": _extract, "cpio": _extract, "ar": _extract, "jar": _extract,
    "tee": _all_positionals("write"),
    "sponge": _all_positionals("write"),
    "rm": _all_positionals("write", tree_opts=("-r", "-R", "--recursive")),
    "rmdir": _all_positionals("write"), "unlink": _all_positionals("write"),
    "shred": _all_positionals("write", "nsu", "--iterations --size --random-source"),
    "touch": _all_positionals("write", "dtr", "--date --reference"),
    "truncate": _all_positionals("write", "sr", "--size --reference"),
    "mkdir": _all_positionals("write", "m", "--mode --context"),
    "mkfifo": _all_positionals("write", "m", "--mode"),
    "chmod": _all_positionals("write", "", "--reference", skip=1, tree_opts=("-R", "--recursive")),
    "chown": _all_positionals("write", "", "--reference --from", skip=1, tree_opts=("-R", "--recursive")),
    "chgrp": _all_positionals("write", "", "--reference", skip=1, tree_opts=("-R", "--recursive")),
    "gzip": _all_positionals("write", "S", "--suffix"), "gunzip": _all_positionals("write", "S", "--suffix"),
    "bzip2": _all_positionals("write"), "xz": _all_positionals("write"), "zstd": _all_positionals("write", "o"),
    "sort": _sort,
}
# These rewrite files only without an option that sends output to stdout.
_STDOUT_OPTIONS = {"gzip": ("-c", "--stdout", "-l", "-t"), "gunzip": ("-c", "--stdout", "-l", "-t"),
                   "bzip2": ("-c", "--stdout", "-t"), "xz": ("-c", "--stdout", "-l", "-t"),
                   "zstd": ("-c", "--stdout", "-l", "-t")}


def effects(args: list[Word]) -> Effects:
    """What one command (name first) does to files and whether it runs other code."""
    e = Effects()
    if not args:
        return e
    name = args[0].value.rsplit("/", 1)[-1] if args[0].value is not None else None
    handler = TABLE.get(name or "")
    if name in _SUBSCRIPT_BUILTINS and any(
            a.value is not None and "[" in a.value and re.search(r"[$`]", a.value) for a in args[1:]):
        e.runs_code.append(f"{name} evaluates an array subscript, which may run commands")
    if name == "rename" or name == "prename":
        e.runs_code.append("rename evaluates a Perl expression")
    if handler is None:
        return e
    if name in _STDOUT_OPTIONS and any(a.value in _STDOUT_OPTIONS[name] for a in args[1:]):
        return e
    handler(args[1:], e)
    for a in args[1:]:
        if a.value is None:
            e.write(UNKNOWN)  # an unknown word may be any option of a command that writes
            break
        if a.glob and a.value[:1] in "*?[":
            e.runs_code.append(f"the pattern {a.value} may expand to an option of {name}")
            break
    return e


# git sub-commands with no option in the table: "always" may store `git <sub>:*` for them.
_PLAIN_GIT = frozenset({"status", "branch", "add", "commit", "checkout", "switch", "restore", "stash", "tag",
                        "merge", "reset", "rm", "mv", "blame", "shortlog", "describe", "rev-parse", "ls-files",
                        "cherry-pick", "revert", "reflog", "remote", "show-ref", "cat-file", "for-each-ref"})


def in_table(words: list[str]) -> bool:
    """Commands whose options decide what they write or run: "always" never stores a bare prefix for them."""
    name = words[0] if words else None
    if name == "git":
        return len(words) < 2 or words[1] not in _PLAIN_GIT
    return name is not None and (name in TABLE or name in _SUBSCRIPT_BUILTINS
                                 or name in ("rename", "prename", "cd", "pushd", "popd"))
