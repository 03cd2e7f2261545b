package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// The call log (--call-log FILE): one JSON object per line per RPC on either socket, appended
// when the RPC ends and before its answer is sent, so a caller that has its answer finds its line:
//
//	{"time": RFC 3339 with ns,
//	 "method": "/csi.v1.Node/NodeStageVolume" (the gRPC method),
//	 "request": the request in protojson with the proto's field names (int64 as strings, maps as
//	            objects, fields at their default value — "", 0, false, empty — left out),
//	 "response": the answer, likewise (absent on error),
//	 "error": {"code": 5, "name": "NotFound", "message": "…", "injected": true (from the fail file)} (absent on success),
//	 "bindMount": {"source", "target", "mounted", "skipped"} (--bind-mounts, publish and unpublish),
//	 "exit": why the process exits after this call (NotifyRegistrationStatus with plugin_registered=false)}
type callLog struct {
	mu   sync.Mutex
	file *os.File
}

type loggedError struct {
	Code     uint32 `json:"code"`
	Name     string `json:"name"`
	Message  string `json:"message"`
	Injected bool   `json:"injected,omitempty"`
}

type logLine struct {
	Time      string          `json:"time"`
	Method    string          `json:"method"`
	Request   json.RawMessage `json:"request"`
	Response  json.RawMessage `json:"response,omitempty"`
	Error     *loggedError    `json:"error,omitempty"`
	BindMount *bindNote       `json:"bindMount,omitempty"`
	Exit      string          `json:"exit,omitempty"`
}

func openCallLog(path string) (*callLog, error) {
	if path == "" {
		return nil, nil
	}
	file, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, fmt.Errorf("--call-log: %w", err)
	}
	return &callLog{file: file}, nil
}

var protoJSON = protojson.MarshalOptions{UseProtoNames: true}

func messageJSON(message any) json.RawMessage {
	m, ok := message.(proto.Message)
	if !ok || m == nil {
		return nil
	}
	data, err := protoJSON.Marshal(m)
	if err != nil {
		return json.RawMessage(fmt.Sprintf("%q", "cannot be written as JSON: "+err.Error()))
	}
	return data
}

func (l *callLog) write(line *logLine) {
	if l == nil {
		return
	}
	data, err := json.Marshal(line)
	if err != nil {
		fmt.Fprintf(os.Stderr, "csimock: call log: %v\n", err)
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, err := l.file.Write(append(data, '\n')); err != nil {
		fmt.Fprintf(os.Stderr, "csimock: call log: %v\n", err)
	}
}

// callRecord is the log line of the call under way, which the handlers add to (noteCall).
type callRecord struct {
	log     *callLog
	line    logLine
	written bool
}

type recordKey struct{}

func recordOf(ctx context.Context) *callRecord {
	record, _ := ctx.Value(recordKey{}).(*callRecord)
	return record
}

// noteCall adds a field to the call's log line.
func noteCall(ctx context.Context, field string, value any) {
	record := recordOf(ctx)
	if record == nil {
		return
	}
	switch field {
	case "bindMount":
		note := value.(bindNote)
		record.line.BindMount = &note
	case "exit":
		record.line.Exit = value.(string)
	}
}

// finish writes the call's line once: from the interceptor, or from a handler about to exit the
// process (which never returns to the interceptor).
func (r *callRecord) finish(response any, err error, injected bool) {
	if r.written {
		return
	}
	r.written = true
	r.line.Time = time.Now().UTC().Format(time.RFC3339Nano)
	if err != nil {
		st := status.Convert(err)
		r.line.Error = &loggedError{Code: uint32(st.Code()), Name: st.Code().String(), Message: st.Message(), Injected: injected}
	} else {
		r.line.Response = messageJSON(response)
	}
	r.log.write(&r.line)
}

// intercept logs each call and injects the fail file's errors. It runs one call at a time on
// both sockets: mockNode and the upstream service share state (service.MockVolumes) that the
// service's own lock does not cover for us, and a mock needs no concurrency.
func intercept(log *callLog, faults *faults) grpc.UnaryServerInterceptor {
	var serial sync.Mutex
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		record := &callRecord{log: log, line: logLine{Method: info.FullMethod, Request: messageJSON(req)}}
		ctx = context.WithValue(ctx, recordKey{}, record)
		serial.Lock()
		defer serial.Unlock()
		fault, err := faults.take(info.FullMethod)
		if err != nil {
			record.finish(nil, err, false)
			return nil, err
		}
		if fault != nil && !fault.After {
			err := fault.status()
			record.finish(nil, err, true)
			return nil, err
		}
		response, err := handler(ctx, req)
		if fault != nil {
			// After: the call was carried out; its caller hears the error instead.
			err := fault.status()
			record.finish(nil, err, true)
			return nil, err
		}
		record.finish(response, err, false)
		if err != nil {
			return nil, err
		}
		return response, nil
	}
}
