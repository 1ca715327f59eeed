package fakelvmd

import (
	"fmt"

	lvmdtypes "github.com/topolvm/topolvm/pkg/lvmd/types"
	"sigs.k8s.io/yaml"
)

// Config is the part of lvmd.yaml lvmd reads (cmd/lvmd/app Config): other keys are ignored.
type Config struct {
	SocketName            string                           `json:"socket-name"`
	DeviceClasses         []*lvmdtypes.DeviceClass         `json:"device-classes"`
	LvcreateOptionClasses []*lvmdtypes.LvcreateOptionClass `json:"lvcreate-option-classes"`
}

// ParseConfig reads an lvmd.yaml document.
func ParseConfig(doc string) (*Config, error) {
	var c Config
	if err := yaml.Unmarshal([]byte(doc), &c); err != nil {
		return nil, fmt.Errorf("lvmd config: %w", err)
	}
	return &c, nil
}
