package acctest

import (
	"encoding/json"
	"strings"
)

// QueryResult is one `list_resource_found` message of `terraform query -json`
// (Terraform 1.14+, internal/command/views/json/query.go QueryResult).
type QueryResult struct {
	Address     string            `json:"address"`
	DisplayName string            `json:"display_name"`
	Identity    map[string]string `json:"identity"`
	// Resource is the resource object with include_resource = true.
	Resource map[string]any `json:"resource_object"`
}

// QueryResults parses the results out of `terraform query -json` output.
func QueryResults(out string) []QueryResult {
	var rs []QueryResult
	for line := range strings.Lines(out) {
		var msg struct {
			Type  string      `json:"type"`
			Found QueryResult `json:"list_resource_found"`
		}
		if json.Unmarshal([]byte(line), &msg) == nil && msg.Type == "list_resource_found" {
			rs = append(rs, msg.Found)
		}
	}
	return rs
}
