#!/usr/bin/python3
"""ini_set.py FILE SECTION KEY VALUE [SECTION KEY VALUE ...]: sets options in an oslo.config file in
place, keeping every other line and comment; a key already set in its section is replaced, a missing
section is appended.  Writes (atomically, same mode and owner) only when something changed; exit 0 when
it wrote, 3 when the file already held every value (the caller restarts what read the file only then)."""
import os
import sys

path, triples = sys.argv[1], sys.argv[2:]
if not triples or len(triples) % 3:
    sys.exit("usage: ini_set.py FILE SECTION KEY VALUE [...]")
with open(path) as f:
    lines = f.read().splitlines()
out = list(lines)
for i in range(0, len(triples), 3):
    section, key, value = triples[i:i + 3]
    want = "%s = %s" % (key, value)
    start = next((n for n, l in enumerate(out) if l.strip() == "[%s]" % section), None)
    if start is None:
        out += ["", "[%s]" % section, want]
        continue
    end = next((n for n in range(start + 1, len(out)) if out[n].startswith("[")), len(out))
    same = [l.strip() for l in out[start + 1:end] if l.split("=", 1)[0].strip() == key]
    if same == [want]:
        continue
    body = [l for l in out[start + 1:end] if l.split("=", 1)[0].strip() != key or l.lstrip().startswith("#")]
    out[start + 1:end] = [want] + body
if out == lines:
    sys.exit(3)
st = os.stat(path)
tmp = path + ".tb-new"
with open(tmp, "w") as f:
    f.write("\n".join(out) + "\n")
os.chmod(tmp, st.st_mode & 0o7777)
os.chown(tmp, st.st_uid, st.st_gid)
os.replace(tmp, path)
