package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// maxSentenceWords is the longest sentence the README and docs/ may hold:
// a newcomer reads a page once (#78).
const maxSentenceWords = 40

// No sentence of the README's and docs' prose is over maxSentenceWords
// words. Code blocks, tables and headings are not prose; code spans and
// link targets count as one word.
func TestTheDocsSentencesAreShort(t *testing.T) {
	for _, name := range append(readmeDocs(t), "../../CONTRIBUTING.md") {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range longSentences(string(b), maxSentenceWords) {
			t.Errorf("%s:%d: a sentence of %d words, over %d: %q", name, s.line, s.words, maxSentenceWords, s.text)
		}
	}
}

type sentence struct {
	line, words int
	text        string
}

var (
	codeSpanRE   = regexp.MustCompile("`[^`]*`")
	linkTargetRE = regexp.MustCompile(`\]\([^)]*\)`)
	listItemRE   = regexp.MustCompile(`^\s*([-*]|\d+\.) `)
	// A sentence ends at . ! ? : or ; (a closing bracket or quote may
	// follow), before a space, or at a link list's " · ".
	sentenceEndRE = regexp.MustCompile(`[.!?:;]["')\]]*\s+|\s+·\s+`)
)

// longSentences are the sentences of markdown text with more than max words.
func longSentences(text string, max int) []sentence {
	var out []sentence
	for _, p := range paragraphs(text) {
		body := linkTargetRE.ReplaceAllString(codeSpanRE.ReplaceAllString(p.text, "code"), "]")
		for _, s := range sentenceEndRE.Split(body, -1) {
			if n := len(strings.Fields(s)); n > max {
				out = append(out, sentence{p.line, n, s})
			}
		}
	}
	return out
}

// paragraphs are text's prose paragraphs and list items, each with its
// first line; code blocks, tables, headings and HTML are left out.
func paragraphs(text string) []sentence {
	var out []sentence
	var cur []string
	start, code := 0, false
	flush := func() {
		if len(cur) > 0 {
			out = append(out, sentence{line: start, text: strings.Join(cur, " ")})
		}
		cur = nil
	}
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(trimmed, "```"):
			code = !code
			flush()
			continue
		case code || trimmed == "" || strings.HasPrefix(trimmed, "|") || strings.HasPrefix(trimmed, "#") || strings.HasPrefix(trimmed, "<"):
			flush()
			continue
		case listItemRE.MatchString(line):
			flush()
			trimmed = strings.TrimSpace(listItemRE.ReplaceAllString(line, ""))
		}
		if len(cur) == 0 {
			start = i + 1
		}
		cur = append(cur, trimmed)
	}
	flush()
	return out
}

// glossaryTerms are the words the README's glossary defines, as they
// show in prose.
var glossaryTerms = map[string]*regexp.Regexp{
	"the seed":      regexp.MustCompile(`(?i)\bseed\b`),
	"strategy":      regexp.MustCompile(`(?i)strateg`),
	"fencing token": regexp.MustCompile(`(?i)fenc`),
	"claim":         regexp.MustCompile(`(?i)\bclaim`),
	"admission":     regexp.MustCompile(`(?i)admission`),
	"waiting room":  regexp.MustCompile(`(?i)waiting room`),
	"arrival":       regexp.MustCompile(`(?i)\barrival`),
	"oversold":      regexp.MustCompile(`(?i)oversel|oversold`),
	"sweeper":       regexp.MustCompile(`(?i)sweeper`),
}

// Each page of docs/ links the README's glossary before it uses any of
// the glossary's words (below its title), and names the words it uses
// there, so that a newcomer who lands on the page knows where they are
// defined (#78 item 1).
func TestTheDocsLinkTheGlossaryBeforeItsWords(t *testing.T) {
	const link = "(../README.md#words-used-below)"
	for _, name := range readmeDocs(t)[1:] { // docs/*.md: the README holds the glossary
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		at := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, link) })
		for at > 0 && strings.TrimSpace(lines[at-1]) != "" {
			at-- // the link's paragraph
		}
		for term, re := range glossaryTerms {
			first := slices.IndexFunc(lines[1:], re.MatchString) + 1
			switch {
			case first == 0: // not used
			case at < 0 || first < at:
				t.Errorf("%s:%d uses %q before the page links the glossary %s", filepath.Base(name), first+1, term, link)
			case !strings.Contains(strings.Join(lines[at:at+3], " "), term):
				t.Errorf("%s uses %q, and the line that links the glossary does not name it", filepath.Base(name), term)
			}
		}
	}
}
