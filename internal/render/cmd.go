package render

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
)

// Main is `terraform-provider-olapgke render`: render PLAN.json (or - for stdin) as Markdown on
// stdout, or with --serve ADDR answer HCP Terraform run-task requests (runtask.go). It returns
// the process exit code.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("render", flag.ContinueOnError)
	fs.SetOutput(stderr)
	maxRows := fs.Int("max-rows", DefaultMaxRows, "ordinals shown per StatefulSet before one summary row for the rest")
	serve := fs.String("serve", "", "answer HCP Terraform run-task requests on this address (e.g. :8080) instead of rendering a file")
	say := func(format string, args ...any) { _, _ = fmt.Fprintf(stderr, format+"\n", args...) }
	fs.Usage = func() {
		say("usage: terraform-provider-olapgke render [-max-rows N] PLAN.json|-")
		say("       terraform-provider-olapgke render -serve ADDR   (HCP Terraform run task; HMAC key from OLAPGKE_RUN_TASK_HMAC_KEY)")
		say("PLAN.json is the output of terraform show -json PLANFILE; - reads it from stdin.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	opts := Options{MaxRows: *maxRows}
	if *serve != "" {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
		defer stop()
		say("olapgke run task listening on %s", *serve)
		if err := Serve(ctx, *serve, RunTask{Options: opts, HMACKey: []byte(os.Getenv("OLAPGKE_RUN_TASK_HMAC_KEY"))}); err != nil {
			say("render: %v", err)
			return 1
		}
		return 0
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	in := stdin
	if name := fs.Arg(0); name != "-" {
		f, err := os.Open(name)
		if err != nil {
			say("render: %v", err)
			return 1
		}
		defer func() { _ = f.Close() }()
		in = f
	}
	if err := Markdown(in, stdout, opts); err != nil {
		say("render: %v", err)
		return 1
	}
	return 0
}
