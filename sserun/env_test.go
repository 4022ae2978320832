package sserun

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestReadEnv(t *testing.T) {
	defaults := Env{
		Results:       DefaultResults,
		Timeout:       time.Hour,
		AgentSocket:   DefaultAgentSocket,
		AdminSocket:   DefaultAdminSocket,
		MCPAddr:       DefaultMCPAddr,
		TaskRoot:      DefaultTaskRoot,
		ScriptTimeout: 20 * time.Minute,
		WorkDir:       os.TempDir(),
		RunnerUser:    DefaultRunnerUser,
		Difficulty:    2,
	}
	tests := []struct {
		name string
		vars map[string]string
		want func(e *Env)
	}{
		{"defaults", nil, func(*Env) {}},
		{"blank is unset", map[string]string{EnvResults: "  ", EnvTimeout: " "}, func(*Env) {}},
		{"all set", map[string]string{
			EnvResults: "/r", EnvTimeout: "90", EnvKeepAlive: "1", EnvAgentSocket: "/a.sock",
			EnvAdminSocket: "/b.sock", EnvTaskRoot: "/t", EnvSourceDir: "/src/p",
			EnvScriptTimeout: "5", EnvWorkDir: "/w", EnvRunnerUser: "nobody", EnvDifficulty: "0", EnvMCPAddr: "127.0.0.1:3999",
		}, func(e *Env) {
			*e = Env{Results: "/r", Timeout: 90 * time.Second, KeepAlive: true, AgentSocket: "/a.sock",
				AdminSocket: "/b.sock", TaskRoot: "/t", SourceDir: "/src/p", ScriptTimeout: 5 * time.Second,
				WorkDir: "/w", RunnerUser: "nobody", Difficulty: 0, MCPAddr: "127.0.0.1:3999"}
		}},
		{"no time limit", map[string]string{EnvTimeout: "0"}, func(e *Env) { e.Timeout = 0 }},
		{"difficulty 4", map[string]string{EnvDifficulty: " 4 "}, func(e *Env) { e.Difficulty = 4 }},
		{"keep alive 0", map[string]string{EnvKeepAlive: "0"}, func(*Env) {}},
		{"keep alive true", map[string]string{EnvKeepAlive: "true"}, func(e *Env) { e.KeepAlive = true }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadEnv(func(k string) string { return tt.vars[k] })
			if err != nil {
				t.Fatalf("ReadEnv() = %v", err)
			}
			want := defaults
			tt.want(&want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ReadEnv() (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadEnvErrors(t *testing.T) {
	tests := []struct {
		name string
		vars map[string]string
		want string
	}{
		{"timeout not a number", map[string]string{EnvTimeout: "1h"}, `TIMEOUT="1h" is not a number of seconds`},
		{"negative timeout", map[string]string{EnvTimeout: "-5"}, "TIMEOUT"},
		{"zero script timeout", map[string]string{EnvScriptTimeout: "0"}, EnvScriptTimeout},
		{"relative results", map[string]string{EnvResults: "results"}, `SSE_RESULTS="results" is not an absolute path`},
		{"difficulty too high", map[string]string{EnvDifficulty: "5"}, `SSE_DIFFICULTY="5" is not a difficulty level: use 0 to 4`},
		{"difficulty not a number", map[string]string{EnvDifficulty: "easy"}, EnvDifficulty},
		{"relative socket", map[string]string{EnvAgentSocket: "sse.sock"}, EnvAgentSocket},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ReadEnv(func(k string) string { return tt.vars[k] })
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ReadEnv() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
