package provider

import (
	"testing"
)

func TestQuietFrameworkLogs(t *testing.T) {
	cases := []struct {
		name  string
		env   map[string]string
		level string // "" = leave the environment as it is
	}{
		{"nothing asked: Terraform shows no provider line", nil, "OFF"},
		{"TF_LOG_PATH alone shows nothing either", map[string]string{"TF_LOG_PATH": "/tmp/tf.log"}, "OFF"},
		{"the user's own framework level is kept", map[string]string{"TF_LOG_SDK_FRAMEWORK": "trace"}, ""},
		{"the user's own framework level is kept with TF_LOG unset", map[string]string{"TF_LOG_SDK_FRAMEWORK": "warn"}, ""},
		{"TF_LOG=DEBUG: DEBUG lines stay, TRACE goes", map[string]string{"TF_LOG": "debug"}, "DEBUG"},
		{"TF_LOG=TRACE: everything is shown", map[string]string{"TF_LOG": "TRACE"}, ""},
		{"TF_LOG=JSON means TRACE", map[string]string{"TF_LOG": "JSON"}, ""},
		{"an unknown level means TRACE", map[string]string{"TF_LOG": "verbose"}, ""},
		{"TF_LOG_PROVIDER wins over TF_LOG", map[string]string{"TF_LOG": "trace", "TF_LOG_PROVIDER": "INFO"}, "INFO"},
		{"TF_LOG_PROVIDER alone", map[string]string{"TF_LOG_PROVIDER": "info"}, "INFO"},
		{"TF_LOG=OFF", map[string]string{"TF_LOG": "off"}, "OFF"},
		{"a more restrictive TF_LOG_SDK is kept", map[string]string{"TF_LOG": "debug", "TF_LOG_SDK": "warn"}, "WARN"},
		{"a less restrictive TF_LOG_SDK cannot show more than Terraform does", map[string]string{"TF_LOG_PROVIDER": "info", "TF_LOG_SDK": "trace"}, "INFO"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			level, ok := QuietFrameworkLogs(func(k string) string { return c.env[k] })
			if ok != (c.level != "") || level != c.level {
				t.Fatalf("QuietFrameworkLogs = %q, %v; want %q", level, ok, c.level)
			}
		})
	}
}
