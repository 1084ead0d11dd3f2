/* test_shquote.c — words quoted for the POSIX shell (util/shquote.h).
 *
 * Safe words stay as they are; every other word is single-quoted with ' written '\''; a
 * quoted word that does not fit gives "" (never a cut quote); and every quoted word,
 * hostile ones included, comes back from a real `sh -c 'printf ...'` byte for byte
 * without running anything. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/check.h"
#include "util/shquote.h"

static void expect(const char *word, const char *want) {
    char out[256];
    size_t need = af_shell_quote(word, out, sizeof out);
    CHECK_MSG(strcmp(out, want) == 0 && need == strlen(want), "'%s': got [%s] want [%s]", word, out, want);
    CHECK(af_shell_quote(word, NULL, 0) == need);
}

/* sh -c "printf '%s\n' WORD" must print word itself, and create no file. */
static void round_trip(const char *dir, const char *word) {
    char quoted[512], cmd[1200], path[600];
    af_shell_quote(word, quoted, sizeof quoted);
    snprintf(path, sizeof path, "%s/out", dir);
    snprintf(cmd, sizeof cmd, "cd %s && printf '%%s' %s > out", dir, quoted);
    CHECK_MSG(system(cmd) == 0, "sh failed on %s", quoted);
    FILE *f = fopen(path, "rb");
    char got[512] = "";
    size_t n = f ? fread(got, 1, sizeof got - 1, f) : 0;
    if (f) fclose(f);
    got[n] = '\0';
    CHECK_MSG(strcmp(got, word) == 0, "sh gave [%s] for [%s] quoted [%s]", got, word, quoted);
    unlink(path);
    snprintf(path, sizeof path, "%s/INJ", dir);
    CHECK_MSG(access(path, F_OK) != 0, "quoting [%s] as [%s] ran a command", word, quoted);
}

int main(void) {
    expect("plain/path-1.case", "plain/path-1.case");
    expect("plugin:/a/b.so", "plugin:/a/b.so");
    expect("", "''");
    expect(NULL, "''");
    expect("x;touch INJ;.case", "'x;touch INJ;.case'");
    expect("plugin:/tmp/a';id>F;'.so", "'plugin:/tmp/a'\\'';id>F;'\\''.so'");
    expect("'", "''\\'''");
    expect("a b", "'a b'");
    expect("$(id)", "'$(id)'");
    expect("~user", "'~user'");
    expect("new\nline", "'new\nline'");
    /* too small: nothing rather than a cut quote */
    char small[5];
    CHECK(af_shell_quote("a b c", small, sizeof small) == 7 && small[0] == '\0');
    /* joined words */
    const char *words[] = {"attnfuzz", "repro", "d i r/x;y.case", "--backend", "worker:p", NULL};
    char line[256];
    size_t need = af_shell_join(words, line, sizeof line);
    CHECK_MSG(strcmp(line, "attnfuzz repro 'd i r/x;y.case' --backend worker:p") == 0, "%s", line);
    CHECK(need == strlen(line));
    CHECK(af_shell_join(words, small, sizeof small) == need && small[0] == '\0');
    /* the shell itself gives back every hostile word intact */
    char dir[] = "/tmp/af_shquote_XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    const char *hostile[] = {"x;touch INJ;.case",
                             "a';touch INJ;'b",
                             "$(touch INJ)",
                             "`touch INJ`",
                             "a\\b\"c",
                             "semi;colon && touch INJ | cat",
                             "new\nline; touch INJ",
                             "*",
                             "'",
                             "''",
                             "-n"};
    for (size_t i = 0; i < sizeof hostile / sizeof hostile[0]; i++) round_trip(dir, hostile[i]);
    rmdir(dir);
    CHECK_DONE("test_shquote");
}
