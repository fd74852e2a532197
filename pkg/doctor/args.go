package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gpu-exporter/gpu-exporter/pkg/config"
)

// Summary is what `gpu-exporter doctor` does, for the exporter's --help.
const Summary = "check once what the exporter with the given flags needs (GPU source, fields, kubelet socket, files, devices) and say how to fix what is broken"

// Usage is the doctor's own help, printed after the exporter's flags.
const Usage = "gpu-exporter doctor [--output=text|json] [--args-from=/proc/1/cmdline] [exporter flags]: " + Summary + ".\n" +
	"--args-from reads the flags of a running exporter from its command line (NUL-separated, as /proc/PID/cmdline), before the flags given here."

// Args takes the doctor's own flags out of the arguments after the
// subcommand: --output (text or json) and --args-from (the command line of
// a running exporter, whose flags go before the remaining ones, skipping
// the program and subcommand). The rest are the exporter's flags.
func Args(args []string, subcommand string) (output string, rest []string, err error) {
	output, rest, err = doctorOutput(args)
	if err == nil {
		rest, err = argsFrom(rest, subcommand)
	}
	return output, rest, err
}

// doctorOutput takes --output=FORMAT (or --output FORMAT) out of args.
func doctorOutput(args []string) (output string, rest []string, err error) {
	output = "text"
	for i := 0; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "--output" || arg == "-output":
			if i+1 == len(args) {
				return "", nil, errors.New("--output needs a value: text or json")
			}
			i++
			output = args[i]
		case strings.HasPrefix(arg, "--output="):
			output = strings.TrimPrefix(arg, "--output=")
		default:
			rest = append(rest, arg)
		}
	}
	if output != "text" && output != "json" {
		return "", nil, fmt.Errorf("--output=%q: want text or json", output)
	}
	return output, rest, nil
}

// argsFrom takes --args-from=FILE out of args and puts the flags of the
// command line FILE holds (NUL-separated, as /proc/PID/cmdline: the program
// name first) before the remaining args, so that a doctor started with
// kubectl exec checks the flags the running exporter was given.
func argsFrom(args []string, subcommand string) ([]string, error) {
	var file string
	var rest []string
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "--args-from":
			if i+1 == len(args) {
				return nil, errors.New("--args-from needs a file, such as /proc/1/cmdline")
			}
			i++
			file = args[i] //nolint:gosec // G602: i < len(args), checked above
		case strings.HasPrefix(a, "--args-from="):
			file = strings.TrimPrefix(a, "--args-from=")
		default:
			rest = append(rest, a)
		}
	}
	if file == "" {
		return rest, nil
	}
	// Bounded, and refused unless a regular file (a named pipe would
	// block): a process's cmdline is read from its memory, and the read
	// waits while the process's memory map is locked (a process stuck in
	// the driver), so the doctor would hang before any check.
	data, err := config.ReadFile(context.Background(), file)
	if err != nil {
		return nil, fmt.Errorf("--args-from: %w", err)
	}
	from := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
	if len(from) == 0 || from[0] == "" {
		return nil, fmt.Errorf("--args-from %s: empty command line", file)
	}
	if err := exporterCommandLine(file, from[0]); err != nil {
		return nil, err
	}
	from = from[1:] // the program
	if len(from) > 0 && from[0] == subcommand {
		from = from[1:]
	}
	return append(from, rest...), nil
}
