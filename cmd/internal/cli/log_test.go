package cli

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestNewLoggerFormats(t *testing.T) {
	for _, format := range []string{"text", "json", "JSON"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			logger, err := newLogger(&buf, "warn", format)
			if err != nil {
				t.Fatal(err)
			}
			logger.Info("hidden below warn")
			logger.Warn("authentication failed", "cid", 7, "user", "bob")
			out := buf.String()
			if strings.Count(out, "\n") != 1 {
				t.Fatalf("want one line (info is below warn), got:\n%s", out)
			}
			if format == "text" {
				requireContains(t, "text log", out, `level=WARN msg="authentication failed" cid=7 user=bob`)
				return
			}
			var rec map[string]any
			if err := json.Unmarshal([]byte(out), &rec); err != nil {
				t.Fatalf("not one JSON object: %v\n%s", err, out)
			}
			if rec["level"] != "WARN" || rec["msg"] != "authentication failed" || rec["cid"] != 7.0 || rec["user"] != "bob" || rec["time"] == nil {
				t.Fatalf("JSON record %v", rec)
			}
		})
	}
}
