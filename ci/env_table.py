#!/usr/bin/env python3
"""ci/env_table.py [config.h] — the ATTNFUZZ_* table of harness/util/config.h as the markdown
rows of docs/environment.md ("| `NAME` | default | meaning |"), one per X(...) entry, in the
header's order. ci/tests/test_readme.sh compares the doc's table with this output."""
import re
import sys


def rows(text):
    """(name, default, meaning) of every X(ID, NAME, DEFAULT, MEANING) of AF_CONFIG_VARS."""
    body = text[text.index("#define AF_CONFIG_VARS(X)"):].replace("\\\n", " ")
    body = body[:body.index("\n")]
    i = body.index(")") + 1  # after the macro's parameter list
    while True:
        i = body.find("X(", i)
        if i < 0:
            return
        i = body.index(",", i) + 1  # past the ID
        fields, cur = [], ""
        while True:  # string literals, commas between fields, ")" at the end
            while body[i] in " \t":
                i += 1
            if body[i] == '"':
                j = i + 1
                while body[j] != '"':
                    j += 2 if body[j] == "\\" else 1
                cur += body[i + 1:j]
                i = j + 1
            elif body[i] == ",":
                fields.append(cur)
                cur = ""
                i += 1
            elif body[i] == ")":
                fields.append(cur)
                i += 1
                break
            else:
                raise SystemExit("env_table.py: unexpected %r in AF_CONFIG_VARS" % body[i:i + 20])
        if len(fields) != 3:
            raise SystemExit("env_table.py: an entry of AF_CONFIG_VARS has %d fields: %s" % (len(fields), fields))
        yield fields


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else "harness/util/config.h"
    for name, default, meaning in rows(open(path).read()):
        print("| `%s` | %s | %s |" % (name, default, meaning))


if __name__ == "__main__":
    main()
