package buildinfo_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/seckill-zk/seckill-zk/internal/buildinfo"
)

// The release is one version everywhere it is said: the chart's
// appVersion, the image's label, the OpenAPI description's, CHANGELOG.md's
// latest release; the
// licence the image names is the repository's.
func TestTheVersionIsOneEverywhere(t *testing.T) {
	read := func(p string) string {
		b, err := os.ReadFile("../../" + p)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if !regexp.MustCompile(`^\d+\.\d+\.\d+$`).MatchString(buildinfo.Version) {
		t.Fatalf("Version %q is not semantic versioning", buildinfo.Version)
	}
	if m := regexp.MustCompile(`(?m)^appVersion: "([^"]*)"`).FindStringSubmatch(read("deploy/helm/seckill/Chart.yaml")); m == nil || m[1] != buildinfo.Version {
		t.Errorf("the chart's appVersion %v, want %q", m, buildinfo.Version)
	}
	if m := regexp.MustCompile(`org\.opencontainers\.image\.version="([^"]*)"`).FindStringSubmatch(read("Dockerfile")); m == nil || m[1] != buildinfo.Version {
		t.Errorf("the image's version label %v, want %q", m, buildinfo.Version)
	}
	if m := regexp.MustCompile(`(?m)^  version: "([^"]*)"`).FindStringSubmatch(read("internal/api/openapi.yaml")); m == nil || m[1] != buildinfo.Version {
		t.Errorf("the OpenAPI description's info.version %v, want %q", m, buildinfo.Version)
	}
	if m := regexp.MustCompile(`(?m)^## (\d+\.\d+\.\d+)`).FindStringSubmatch(read("CHANGELOG.md")); m == nil || m[1] != buildinfo.Version {
		t.Errorf("CHANGELOG.md's latest release %v, want %q", m, buildinfo.Version)
	}
	if !strings.Contains(read("LICENSE"), "Apache License") || !strings.Contains(read("Dockerfile"), `org.opencontainers.image.licenses="Apache-2.0"`) {
		t.Error("LICENSE is not Apache-2.0, or the image does not say so")
	}
	if s := buildinfo.Read().String(); !strings.HasPrefix(s, buildinfo.Version+" (commit ") {
		t.Errorf("the version line %q", s)
	}
}
