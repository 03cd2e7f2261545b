package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The fail file (--fail-file FILE) makes RPCs fail with a chosen gRPC code. It is re-read at every
// RPC; a missing file injects nothing. It holds a JSON array of rules:
//
//	[{"method": "NodeStageVolume", "code": 4, "message": "…", "times": 2, "after": false}]
//
//	method   the RPC's name (NodeStageVolume) or its gRPC method (/csi.v1.Node/NodeStageVolume)
//	code     the gRPC status code, 1 to 16 (4 DeadlineExceeded, 5 NotFound, 13 Internal, 14 Unavailable, …)
//	message  the status message (default: "injected by the csimock fail file")
//	times    how many calls fail; each failing call counts it down and the file is rewritten, so
//	         a test reads what is left (0: spent). Absent: every call fails while the rule is there.
//	after    false (default): the call fails without reaching the driver. true: the driver carries
//	         it out, then its caller hears the error (a driver that mounted, then timed out).
//
// The first rule that names the method and is not spent applies. A file that cannot be read or
// parsed, or a rule with an unknown field or a bad code, fails every RPC with Internal and says why.
// Write it whole (a temporary file renamed over it), as test/support/csiMock.ts does.
type faults struct {
	mu   sync.Mutex
	file string
}

type faultRule struct {
	Method  string `json:"method"`
	Code    uint32 `json:"code"`
	Message string `json:"message,omitempty"`
	Times   *int   `json:"times,omitempty"`
	After   bool   `json:"after,omitempty"`
}

func (r *faultRule) status() error {
	message := r.Message
	if message == "" {
		message = "injected by the csimock fail file"
	}
	return status.Error(codes.Code(r.Code), message)
}

func (r *faultRule) matches(fullMethod string) bool {
	return r.Method == fullMethod || r.Method == fullMethod[strings.LastIndex(fullMethod, "/")+1:]
}

// take returns the rule that fails this call (counting it down), nil when none does, or an
// Internal error when the file is broken.
func (f *faults) take(fullMethod string) (*faultRule, error) {
	if f.file == "" {
		return nil, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	data, err := os.ReadFile(f.file)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, status.Errorf(codes.Internal, "csimock fail file %s: %v", f.file, err)
	}
	var rules []*faultRule
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.DisallowUnknownFields()
	if err := decoder.Decode(&rules); err != nil {
		return nil, status.Errorf(codes.Internal, "csimock fail file %s: %v", f.file, err)
	}
	for i, rule := range rules {
		if rule.Method == "" || rule.Code < 1 || rule.Code > 16 {
			return nil, status.Errorf(codes.Internal, "csimock fail file %s: rule %d wants a method and a code from 1 to 16", f.file, i)
		}
	}
	for _, rule := range rules {
		if !rule.matches(fullMethod) || (rule.Times != nil && *rule.Times <= 0) {
			continue
		}
		if rule.Times != nil {
			*rule.Times--
			if err := rewrite(f.file, rules); err != nil {
				return nil, status.Errorf(codes.Internal, "csimock fail file %s: %v", f.file, err)
			}
		}
		return rule, nil
	}
	return nil, nil
}

func rewrite(file string, rules []*faultRule) error {
	data, err := json.MarshalIndent(rules, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".csimock-fail-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), file)
}
