// Package lvmdconf reads, edits and validates TopoLVM's lvmd configuration file (the lvmd.yaml
// key of the topolvm-lvmd-N ConfigMap). It is pure: text in, text out, no clients.
//
// Several owners edit one file (one olapgke_topolvm_device_class per device class, plus the Helm
// chart or a human for the rest), so edits are surgical: Set and Remove touch one entry of
// device-classes; every other top-level key (socket-name, lvcreate-option-classes, keys this
// package does not know) and unknown fields inside the edited entry are kept. The document is
// re-serialised with sorted keys (sigs.k8s.io/yaml goes through JSON): comments and key order of
// the original text are not preserved, the order of device-classes is.
//
// Field names and rules follow lvmd (topolvm/topolvm pkg/lvmd/types and pkg/lvmd
// ValidateDeviceClasses, docs/lvmd.md).
package lvmdconf

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Field names of lvmd's config.
const (
	KeyDeviceClasses      = "device-classes"
	KeyName               = "name"
	KeyVolumeGroup        = "volume-group"
	KeyDefault            = "default"
	KeySpareGB            = "spare-gb"
	KeyStripe             = "stripe"
	KeyStripeSize         = "stripe-size"
	KeyLVCreateOptions    = "lvcreate-options"
	KeyType               = "type"
	KeyThinPool           = "thin-pool"
	KeyOverprovisionRatio = "overprovision-ratio"

	TypeThick = "thick"
	TypeThin  = "thin"

	// DefaultSpareGB is what lvmd keeps free in a volume group when spare-gb is absent.
	DefaultSpareGB = 10
)

// ThinPool is lvmd's thin-pool block.
type ThinPool struct {
	Name               string  `json:"name"`
	OverprovisionRatio float64 `json:"overprovision-ratio"`
}

// DeviceClass is one entry of lvmd's device-classes, with lvmd's field names.
type DeviceClass struct {
	Name            string    `json:"name"`
	VolumeGroup     string    `json:"volume-group"`
	Default         bool      `json:"default,omitempty"`
	SpareGB         *uint64   `json:"spare-gb,omitempty"`
	Stripe          *uint     `json:"stripe,omitempty"`
	StripeSize      string    `json:"stripe-size,omitempty"`
	LVCreateOptions []string  `json:"lvcreate-options,omitempty"`
	Type            string    `json:"type,omitempty"`
	ThinPool        *ThinPool `json:"thin-pool,omitempty"`
}

// IsThin reports whether the class provisions thin volumes.
func (d DeviceClass) IsThin() bool { return d.Type == TypeThin }

// EffectiveType is the class's type with lvmd's default (thick) filled in.
func (d DeviceClass) EffectiveType() string {
	if d.Type == "" {
		return TypeThick
	}
	return d.Type
}

// target is what lvmd requires to be unique across classes: the volume group for thick classes,
// volume-group/thin-pool for thin classes.
func (d DeviceClass) target() string {
	if d.IsThin() && d.ThinPool != nil {
		return d.VolumeGroup + "/" + d.ThinPool.Name
	}
	return d.VolumeGroup
}

// Config is a parsed lvmd.yaml document. The zero value is an empty document.
type Config struct {
	doc map[string]any
}

// Parse reads an lvmd.yaml document. Empty text is an empty document. It checks the shape
// (device-classes is a list of mappings with lvmd's field types), not lvmd's rules: see Validate.
func Parse(text string) (*Config, error) {
	c := &Config{doc: map[string]any{}}
	if strings.TrimSpace(text) == "" {
		return c, nil
	}
	if err := yaml.Unmarshal([]byte(text), &c.doc); err != nil {
		return nil, fmt.Errorf("lvmd config is not a YAML mapping: %w", err)
	}
	if c.doc == nil {
		c.doc = map[string]any{}
	}
	if _, err := c.entries(); err != nil {
		return nil, err
	}
	if _, err := c.Classes(); err != nil {
		return nil, err
	}
	return c, nil
}

// entries returns the raw device-classes entries.
func (c *Config) entries() ([]map[string]any, error) {
	raw, ok := c.doc[KeyDeviceClasses]
	if !ok || raw == nil {
		return nil, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, fmt.Errorf("lvmd config: %s is a %T, not a list", KeyDeviceClasses, raw)
	}
	out := make([]map[string]any, 0, len(list))
	for i, e := range list {
		m, ok := e.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("lvmd config: %s[%d] is a %T, not a mapping", KeyDeviceClasses, i, e)
		}
		out = append(out, m)
	}
	return out, nil
}

func (c *Config) setEntries(es []map[string]any) {
	list := make([]any, len(es))
	for i, e := range es {
		list[i] = e
	}
	if c.doc == nil {
		c.doc = map[string]any{}
	}
	c.doc[KeyDeviceClasses] = list
}

// decode converts one raw entry to the typed class.
func decode(i int, e map[string]any) (DeviceClass, error) {
	b, err := json.Marshal(e)
	if err != nil {
		return DeviceClass{}, err
	}
	var dc DeviceClass
	if err := json.Unmarshal(b, &dc); err != nil {
		return DeviceClass{}, fmt.Errorf("lvmd config: %s[%d]: %w", KeyDeviceClasses, i, err)
	}
	return dc, nil
}

// Classes returns the device classes in file order.
func (c *Config) Classes() ([]DeviceClass, error) {
	es, err := c.entries()
	if err != nil {
		return nil, err
	}
	out := make([]DeviceClass, 0, len(es))
	for i, e := range es {
		dc, err := decode(i, e)
		if err != nil {
			return nil, err
		}
		out = append(out, dc)
	}
	return out, nil
}

// Get returns the class called name.
func (c *Config) Get(name string) (DeviceClass, bool) {
	classes, err := c.Classes()
	if err != nil {
		return DeviceClass{}, false
	}
	for _, dc := range classes {
		if dc.Name == name {
			return dc, true
		}
	}
	return DeviceClass{}, false
}

// Set puts dc into device-classes: an entry with the same name is updated in place (fields this
// package does not know are kept; known fields absent from dc are removed), otherwise dc is
// appended.
func (c *Config) Set(dc DeviceClass) error {
	es, err := c.entries()
	if err != nil {
		return err
	}
	for i, e := range es {
		if e[KeyName] == dc.Name {
			es[i] = apply(e, dc)
			c.setEntries(es)
			return nil
		}
	}
	c.setEntries(append(es, apply(map[string]any{}, dc)))
	return nil
}

// Rename changes the name of entry from to dc.Name and then applies dc, keeping the entry's
// position and unknown fields. When from does not exist it is Set.
func (c *Config) Rename(from string, dc DeviceClass) error {
	es, err := c.entries()
	if err != nil {
		return err
	}
	for i, e := range es {
		if e[KeyName] == from {
			es[i] = apply(e, dc)
			c.setEntries(es)
			return nil
		}
	}
	return c.Set(dc)
}

// Remove deletes the entry called name and reports whether there was one.
func (c *Config) Remove(name string) (bool, error) {
	es, err := c.entries()
	if err != nil {
		return false, err
	}
	n := len(es)
	es = slices.DeleteFunc(es, func(e map[string]any) bool { return e[KeyName] == name })
	if len(es) == n {
		return false, nil
	}
	c.setEntries(es)
	return true, nil
}

// apply writes dc's known fields onto a copy of entry e.
func apply(e map[string]any, dc DeviceClass) map[string]any {
	out := maps.Clone(e)
	set := func(k string, v any, present bool) {
		if present {
			out[k] = v
		} else {
			delete(out, k)
		}
	}
	out[KeyName] = dc.Name
	out[KeyVolumeGroup] = dc.VolumeGroup
	set(KeyDefault, true, dc.Default)
	if dc.SpareGB != nil {
		set(KeySpareGB, *dc.SpareGB, true)
	} else {
		set(KeySpareGB, nil, false)
	}
	if dc.Stripe != nil {
		set(KeyStripe, *dc.Stripe, true)
	} else {
		set(KeyStripe, nil, false)
	}
	set(KeyStripeSize, dc.StripeSize, dc.StripeSize != "")
	opts := make([]any, len(dc.LVCreateOptions))
	for i, o := range dc.LVCreateOptions {
		opts[i] = o
	}
	set(KeyLVCreateOptions, opts, len(dc.LVCreateOptions) > 0)
	set(KeyType, dc.Type, dc.Type != "")
	if dc.ThinPool != nil {
		tp, _ := out[KeyThinPool].(map[string]any)
		tp = maps.Clone(tp)
		if tp == nil {
			tp = map[string]any{}
		}
		tp[KeyName] = dc.ThinPool.Name
		tp[KeyOverprovisionRatio] = dc.ThinPool.OverprovisionRatio
		out[KeyThinPool] = tp
	} else {
		delete(out, KeyThinPool)
	}
	return out
}

// Marshal renders the document.
func (c *Config) Marshal() (string, error) {
	if c.doc == nil {
		c.doc = map[string]any{}
	}
	b, err := yaml.Marshal(c.doc)
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// Validation rules of lvmd (pkg/lvmd ValidateDeviceClasses) and LVM.
var (
	// qualifiedName is lvmd's device-class name rule; it is also the rule for the name part of
	// the node annotation key capacity.topolvm.io/<class>.
	qualifiedName = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
	// lvmName is LVM's rule for volume group and logical volume names (lvm(8) "VALID NAMES").
	lvmName = regexp.MustCompile(`^[A-Za-z0-9_.+][-A-Za-z0-9_.+]*$`)
	// stripeSize is lvcreate's --stripesize syntax: a number with an optional unit
	// (b, s, k, m, g, t, p, e; either case). lvmd's own regexp also accepts a bare unit; we don't.
	stripeSize = regexp.MustCompile(`(?i)^[0-9]+[bskmgtpe]?$`)
)

// MaxNameLength is lvmd's limit on device-class names (and the annotation-key name limit).
const MaxNameLength = 63

// MaxVolumeGroupLength is LVM's limit on volume group names.
const MaxVolumeGroupLength = 127

// ValidateName checks a device-class name against lvmd's rule.
func ValidateName(name string) error {
	switch {
	case name == "":
		return errors.New("the device-class name is empty")
	case len(name) > MaxNameLength:
		return fmt.Errorf("device-class name %q is %d characters long; lvmd allows at most %d (it is also the name part of the node annotation capacity.topolvm.io/<class>)", name, len(name), MaxNameLength)
	case !qualifiedName.MatchString(name):
		return fmt.Errorf("device-class name %q must consist of alphanumeric characters, '-', '_' or '.', and start and end with an alphanumeric character (lvmd's rule; the name is also used in the node annotation key capacity.topolvm.io/<class>)", name)
	}
	return nil
}

// ValidateVolumeGroup checks a volume group name against LVM's rules.
func ValidateVolumeGroup(vg string) error {
	switch {
	case vg == "":
		return errors.New("the volume group name is empty")
	case len(vg) > MaxVolumeGroupLength:
		return fmt.Errorf("volume group name %q is longer than LVM's %d characters", vg, MaxVolumeGroupLength)
	case vg == "." || vg == ".." || !lvmName.MatchString(vg):
		return fmt.Errorf("volume group name %q is not a valid LVM name: use letters, digits and '+_.-', not starting with '-', and not '.' or '..'", vg)
	}
	return nil
}

// ValidateStripeSize checks lvcreate's --stripesize syntax ("64k", "4m", "4096").
func ValidateStripeSize(s string) error {
	if !stripeSize.MatchString(s) {
		return fmt.Errorf("stripe-size %q is not lvcreate size syntax: a whole number with an optional unit b, s, k, m, g, t, p or e (for example 64k or 4m)", s)
	}
	return nil
}

// ValidateClass applies the per-class rules: name, volume group, type, thin pool (name and a
// ratio above 1), stripe and stripe-size. It returns every problem found.
//
// On the overprovision ratio: lvmd rejects a ratio below 1.0 (its message says "should be greater
// than 1.0" but it accepts exactly 1.0). A ratio of 1.0 only makes a thin pool behave like thick
// provisioning with extra metadata cost, so olapgke requires strictly more than 1.
func ValidateClass(dc DeviceClass) []error {
	var errs []error
	if err := ValidateName(dc.Name); err != nil {
		errs = append(errs, err)
	}
	if err := ValidateVolumeGroup(dc.VolumeGroup); err != nil {
		errs = append(errs, err)
	}
	switch dc.Type {
	case "", TypeThick:
		if dc.ThinPool != nil {
			errs = append(errs, fmt.Errorf("device-class %q is thick but has a thin-pool; thin-pool is used only with type thin", dc.Name))
		}
	case TypeThin:
		if dc.ThinPool == nil {
			errs = append(errs, fmt.Errorf("device-class %q has type thin but no thin-pool; thin classes need thin-pool.name and thin-pool.overprovision-ratio", dc.Name))
			break
		}
		if err := ValidateVolumeGroup(dc.ThinPool.Name); err != nil {
			errs = append(errs, fmt.Errorf("thin-pool name of device-class %q: %w", dc.Name, err))
		}
		if !(dc.ThinPool.OverprovisionRatio > 1) {
			errs = append(errs, fmt.Errorf("thin-pool overprovision-ratio of device-class %q is %g; it must be greater than 1", dc.Name, dc.ThinPool.OverprovisionRatio))
		}
	default:
		errs = append(errs, fmt.Errorf("device-class %q has type %q; lvmd knows thick and thin", dc.Name, dc.Type))
	}
	if dc.Stripe != nil && *dc.Stripe < 1 {
		errs = append(errs, fmt.Errorf("stripe of device-class %q is %d; it must be at least 1", dc.Name, *dc.Stripe))
	}
	if dc.StripeSize != "" {
		if err := ValidateStripeSize(dc.StripeSize); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// Conflicts checks the rules that span classes: unique names, unique targets (a volume group is
// used by at most one thick class, a volume-group/thin-pool by at most one thin class) and
// exactly one default. It returns every problem found.
func Conflicts(classes []DeviceClass) []error {
	var errs []error
	names := map[string]bool{}
	targets := map[string]string{}
	var defaults []string
	for _, dc := range classes {
		if names[dc.Name] {
			errs = append(errs, &ConflictError{Classes: []string{dc.Name}, msg: fmt.Sprintf("device-class name %q appears twice", dc.Name)})
		}
		names[dc.Name] = true
		t := dc.target()
		if other, ok := targets[t]; ok {
			what := "volume group " + quote(dc.VolumeGroup)
			if dc.IsThin() {
				what = "thin pool " + quote(t)
			}
			errs = append(errs, &ConflictError{Classes: []string{other, dc.Name}, msg: fmt.Sprintf("device-classes %q and %q both use %s; lvmd allows one thick class per volume group and one thin class per volume-group/thin-pool", other, dc.Name, what)})
		} else {
			targets[t] = dc.Name
		}
		if dc.Default {
			defaults = append(defaults, dc.Name)
		}
	}
	if len(defaults) != 1 {
		errs = append(errs, &DefaultCountError{Defaults: defaults})
	}
	return errs
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// ConflictError is a conflict between device classes: a name given twice, or two classes on
// one volume group (thick) or thin pool. Classes names the classes involved.
type ConflictError struct {
	Classes []string
	msg     string
}

func (e *ConflictError) Error() string { return e.msg }

// Involves reports whether class name is one of the conflicting classes.
func (e *ConflictError) Involves(name string) bool { return slices.Contains(e.Classes, name) }

// DefaultCountError says the file does not have exactly one default class.
type DefaultCountError struct {
	Defaults []string
}

func (e *DefaultCountError) Error() string {
	if len(e.Defaults) == 0 {
		return "no device-class is marked default; exactly one must be (PVCs whose StorageClass names no device-class use it)"
	}
	return fmt.Sprintf("%d device-classes are marked default (%s); exactly one must be", len(e.Defaults), strings.Join(e.Defaults, ", "))
}

// Validate applies ValidateClass to every class and Conflicts to the set, and requires at least
// one class, as lvmd does at start.
func Validate(classes []DeviceClass) error {
	if len(classes) == 0 {
		return errors.New("lvmd config has no device-classes; lvmd needs at least one")
	}
	var errs []error
	for _, dc := range classes {
		errs = append(errs, ValidateClass(dc)...)
	}
	errs = append(errs, Conflicts(classes)...)
	return errors.Join(errs...)
}
