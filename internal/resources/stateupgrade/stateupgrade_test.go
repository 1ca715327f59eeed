package stateupgrade

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestAddOrdinalNames(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ in, want string }{
		"names from pod, added attribute null": {
			in:   `{"id":"x","moves":[{"ordinal":1,"pod":"h-1"},{"ordinal":0,"pod":"h-0"}]}`,
			want: `{"id":"x","moves":[{"name":"h-1","ordinal":1,"pod":"h-1"},{"name":"h-0","ordinal":0,"pod":"h-0"}],"plan_summary":null}`,
		},
		"null list stays null": {
			in:   `{"moves":null}`,
			want: `{"moves":null,"plan_summary":null}`,
		},
		"no pod: null name": {
			in:   `{"moves":[{"ordinal":3}]}`,
			want: `{"moves":[{"name":null,"ordinal":3}],"plan_summary":null}`,
		},
		"already upgraded: kept": {
			in:   `{"moves":[{"name":"keep","pod":"h-0"}],"plan_summary":"s"}`,
			want: `{"moves":[{"name":"keep","pod":"h-0"}],"plan_summary":"s"}`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := AddOrdinalNames([]byte(tc.in), "moves", "plan_summary")
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &w); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(w, g); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	if _, err := AddOrdinalNames([]byte(`{"moves":{"not":"a list"}}`), "moves"); err == nil {
		t.Error("a moves attribute that is not a list: no error")
	}
}

func TestRenameElemAttr(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ in, want string }{
		"renamed in every entry, values kept": {
			in:   `{"id":"x","volumes":[{"pvc":"a-0","stateful_set":"ns/a","ordinal":0},{"pvc":"b","stateful_set":"","ordinal":-1}]}`,
			want: `{"id":"x","volumes":[{"pvc":"a-0","statefulset":"ns/a","ordinal":0},{"pvc":"b","statefulset":"","ordinal":-1}]}`,
		},
		"null value kept null": {
			in:   `{"volumes":[{"stateful_set":null}]}`,
			want: `{"volumes":[{"statefulset":null}]}`,
		},
		"absent: null": {
			in:   `{"volumes":[{"pvc":"a"}]}`,
			want: `{"volumes":[{"pvc":"a","statefulset":null}]}`,
		},
		"null list stays null": {
			in:   `{"id":"x","volumes":null}`,
			want: `{"id":"x","volumes":null}`,
		},
		"empty list stays empty": {
			in:   `{"volumes":[]}`,
			want: `{"volumes":[]}`,
		},
		"no list: unchanged": {
			in:   `{"id":"x"}`,
			want: `{"id":"x"}`,
		},
		"already upgraded: kept": {
			in:   `{"volumes":[{"statefulset":"keep"}]}`,
			want: `{"volumes":[{"statefulset":"keep"}]}`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := RenameElemAttr([]byte(tc.in), "volumes", "stateful_set", "statefulset")
			if err != nil {
				t.Fatal(err)
			}
			var g, w any
			if err := json.Unmarshal(got, &g); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.want), &w); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(w, g); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
	if _, err := RenameElemAttr([]byte(`{"volumes":{"not":"a list"}}`), "volumes", "a", "b"); err == nil {
		t.Error("a volumes attribute that is not a list: no error")
	}
	if _, err := RenameElemAttr(nil, "volumes", "a", "b"); err == nil {
		t.Error("no JSON: no error")
	}
}
