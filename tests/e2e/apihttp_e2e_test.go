package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seckill-zk/seckill-zk/tests/framework/e2e"
)

// TestTheApiHttpFileRuns runs api.http as REST Client would, against an
// instance of the test's own (its @base rewritten): every request, in
// order, its variables from the named responses before it, each answered
// the status it expects; and the file covers every route the OpenAPI
// description has.
func TestTheApiHttpFileRuns(t *testing.T) {
	raw, err := os.ReadFile("../../api.http")
	if err != nil {
		t.Fatal(err)
	}
	s := e2e.NewStack(t, e2e.WithPayTimeout(time.Minute))
	s.Shop(t, "migrate")
	s.Shop(t, "stock", "set", "--goods", "1", "--stock", "100", "--clear-orders")
	in := s.Serve(t)
	vars := map[string]string{}
	responses := map[string]map[string]any{} // by @name: the JSON body
	expand := func(v string) string {
		return regexp.MustCompile(`\{\{([^}]+)\}\}`).ReplaceAllStringFunc(v, func(m string) string {
			key := strings.TrimSpace(m[2 : len(m)-2])
			if v, ok := vars[key]; ok {
				return v
			}
			// name.response.body.field
			parts := strings.Split(key, ".")
			if len(parts) == 4 && parts[1] == "response" && parts[2] == "body" {
				if body, ok := responses[parts[0]]; ok {
					switch x := body[parts[3]].(type) {
					case float64:
						return strconv.FormatInt(int64(x), 10)
					case string:
						return x
					}
				}
			}
			t.Fatalf("api.http: %s has no value here", m)
			return ""
		})
	}
	client := &http.Client{Timeout: 30 * time.Second}
	paths := map[string]bool{}
	ran := 0
	for i, block := range strings.Split(string(raw), "\n###") {
		if i > 0 { // the rest of the ### line is the request's title
			_, block, _ = strings.Cut(block, "\n")
		}
		var name string
		expect := 0
		var req *http.Request
		headers := true
		for _, line := range strings.Split(block, "\n") {
			line = strings.TrimSpace(line)
			switch {
			case strings.HasPrefix(line, "@") && strings.Contains(line, "="):
				k, v, _ := strings.Cut(line[1:], "=")
				vars[strings.TrimSpace(k)] = strings.TrimSpace(v)
				if strings.TrimSpace(k) == "base" {
					vars["base"] = in.URL // the test's own instance
				}
			case strings.HasPrefix(line, "# @name "):
				name = strings.TrimSpace(strings.TrimPrefix(line, "# @name "))
			case strings.HasPrefix(line, "# expect "):
				expect, _ = strconv.Atoi(strings.TrimPrefix(line, "# expect "))
			case line == "" || strings.HasPrefix(line, "#"):
				if req != nil {
					headers = false
				}
			case req == nil:
				method, url, ok := strings.Cut(line, " ")
				if !ok {
					t.Fatalf("api.http: %q is not METHOD URL", line)
				}
				u := expand(url)
				if req, err = http.NewRequest(method, u, nil); err != nil {
					t.Fatal(err)
				}
				paths[req.URL.Path] = true
			case headers:
				k, v, ok := strings.Cut(line, ":")
				if !ok {
					t.Fatalf("api.http: %q is not a header", line)
				}
				req.Header.Set(strings.TrimSpace(k), expand(strings.TrimSpace(v)))
			}
		}
		if req == nil {
			continue
		}
		if expect == 0 {
			t.Errorf("api.http: %s %s says no status to expect", req.Method, req.URL.Path)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ran++
		if resp.StatusCode != expect {
			t.Errorf("api.http: %s %s: %d %.200s, want %d", req.Method, req.URL, resp.StatusCode, body, expect)
		}
		if name != "" {
			var fields map[string]any
			_ = json.Unmarshal(body, &fields)
			responses[name] = fields
		}
	}
	if ran < 10 {
		t.Fatalf("ran %d requests of api.http: the parse lost them", ran)
	}
	// Every route of the description is asked once at least.
	spec, err := os.ReadFile("../../internal/api/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^  (/[^:]*):$`).FindAllStringSubmatch(string(spec), -1) {
		route := regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(m[1], `[^/]+`)
		re := regexp.MustCompile("^" + route + "$")
		found := false
		for p := range paths {
			found = found || re.MatchString(p)
		}
		if !found {
			t.Errorf("api.http asks nothing of %s", m[1])
		}
	}
}
