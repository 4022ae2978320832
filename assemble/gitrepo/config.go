package gitrepo

import "strings"

// repoConfig is the .git/config that `git init` of git 2.39 writes on Linux.
const repoConfig = "[core]\n" +
	"\trepositoryformatversion = 0\n" +
	"\tfilemode = true\n" +
	"\tbare = false\n" +
	"\tlogallrefupdates = true\n"

// UserConfig returns the content of a ~/.gitconfig setting user.name and
// user.email, byte for byte what `git config --global user.name NAME` then
// `git config --global user.email EMAIL` write into a new file.
func UserConfig(name, email string) []byte {
	return []byte("[user]\n" +
		"\tname = " + configValue(name) + "\n" +
		"\temail = " + configValue(email) + "\n")
}

// configValue quotes a value as git config writes it: in double quotes
// when it starts or ends with a space or holds ';' or '#', with '"' and
// '\' escaped and newline and tab written as \n and \t.
func configValue(v string) string {
	quote := ""
	if strings.HasPrefix(v, " ") || strings.HasSuffix(v, " ") || strings.ContainsAny(v, ";#") {
		quote = `"`
	}
	var b strings.Builder
	b.WriteString(quote)
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case '\n':
			b.WriteString(`\n`)
		case '\t':
			b.WriteString(`\t`)
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteString(quote)
	return b.String()
}
