package envconfig

import (
	"fmt"
	"reflect"
)

// Runner returns the rows that configure the runner: those with a Field or
// a Builds (runner.ConfigFromEnv reads them).
func Runner() []Setting {
	return rows(func(s Setting) bool { return s.Field != "" || s.Builds != "" })
}

// Command returns the rows of the pginbox command's own settings:
// DATABASE_URL, PGINBOX_DATA_DIR, PGINBOX_LOG_LEVEL.
func Command() []Setting {
	return rows(func(s Setting) bool { return s.Field == "" && s.Builds == "" })
}

func rows(keep func(Setting) bool) []Setting {
	var out []Setting
	for _, s := range Table {
		if keep(s) {
			out = append(out, s)
		}
	}
	return out
}

// FieldError is a runner.Config field whose value breaks its setting's rule.
type FieldError struct {
	// Setting is the field's row.
	Setting Setting
	// Msg is what is wrong, after the field's name: `"8080" is not host:port`.
	Msg string
}

// Error returns "config: <Field> <what is wrong> (<variable>)": the field
// a Go program set, then the variable that sets it from the environment.
func (e *FieldError) Error() string {
	msg := "config: " + e.Setting.Field + " " + e.Msg
	if e.Setting.Env != "" {
		msg += " (" + e.Setting.Env + ")"
	}
	return msg
}

// Apply copies the values set in v to the fields of config (a pointer to a
// runner.Config) that their rows name.
func Apply(v Values, config any) {
	c := reflect.ValueOf(config).Elem()
	for _, s := range Table {
		if s.Field == "" || s.OldNameOf != "" || !v.set[s.Env] {
			continue
		}
		c.FieldByName(s.Field).Set(reflect.ValueOf(v.value[s.Env]))
	}
}

// SetDefaults sets each field of config (a pointer to a runner.Config) that
// holds no value to its row's default.
func SetDefaults(config any) {
	c := reflect.ValueOf(config).Elem()
	for _, s := range Table {
		if s.Field == "" || s.Default == "" || s.OldNameOf != "" {
			continue
		}
		f := c.FieldByName(s.Field)
		unset := s.kind.unset
		if unset == nil {
			unset = func(any) bool { return f.IsZero() }
		}
		if unset(f.Interface()) {
			d, _ := s.kind.parse(s.Default)
			f.Set(reflect.ValueOf(d))
		}
	}
}

// Check returns the first field of config (a runner.Config, or a pointer to
// one) that breaks its row's rule, as a *FieldError; nil if none does. Run
// it after SetDefaults: a zero field is no value.
func Check(config any) error {
	c := reflect.Indirect(reflect.ValueOf(config))
	for _, s := range Table {
		if s.Field == "" || s.OldNameOf != "" {
			continue
		}
		x := c.FieldByName(s.Field).Interface()
		if s.kind.valid != nil && !s.kind.valid(x) {
			msg := s.kind.want
			switch {
			case s.kind.secret:
			case c.FieldByName(s.Field).Kind() == reflect.String:
				msg = fmt.Sprintf("%q %s", x, msg)
			default:
				msg = fmt.Sprintf("%v %s", x, msg)
			}
			return &FieldError{s, msg}
		}
		if s.LongerThan != "" {
			short, _ := Lookup(s.LongerThan)
			if c.FieldByName(s.Field).Int() <= c.FieldByName(short.Field).Int() {
				return &FieldError{s, "must be longer than " + short.Field + ", " + s.why}
			}
		}
	}
	return nil
}
