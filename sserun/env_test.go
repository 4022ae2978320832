package sserun

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/42-b3yond-6ug/ssebench/contract"
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
		GradeTimeout:  contract.DefaultGradeTimeout,
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
		{"blank is unset", map[string]string{contract.EnvResults: "  ", contract.EnvTimeout: " "}, func(*Env) {}},
		{"all set", map[string]string{
			contract.EnvResults: "/r", contract.EnvTimeout: "90", contract.EnvKeepAlive: "1", contract.EnvAgentSocket: "/a.sock",
			contract.EnvAdminSocket: "/b.sock", contract.EnvTaskRoot: "/t", contract.EnvSourceDir: "/src/p",
			contract.EnvScriptTimeout: "5", contract.EnvWorkDir: "/w", contract.EnvRunnerUser: "nobody", contract.EnvDifficulty: "0", contract.EnvMCPAddr: "127.0.0.1:3999",
			contract.EnvGradeTimeout: "600", contract.EnvAllowNoSandbox: "1",
		}, func(e *Env) {
			*e = Env{Results: "/r", Timeout: 90 * time.Second, KeepAlive: true, AgentSocket: "/a.sock",
				AdminSocket: "/b.sock", TaskRoot: "/t", SourceDir: "/src/p", ScriptTimeout: 5 * time.Second,
				WorkDir: "/w", RunnerUser: "nobody", Difficulty: 0, MCPAddr: "127.0.0.1:3999",
				GradeTimeout: 10 * time.Minute, AllowNoSandbox: true}
		}},
		{"no time limit", map[string]string{contract.EnvTimeout: "0"}, func(e *Env) { e.Timeout = 0 }},
		{"difficulty 4", map[string]string{contract.EnvDifficulty: " 4 "}, func(e *Env) { e.Difficulty = 4 }},
		{"keep alive 0", map[string]string{contract.EnvKeepAlive: "0"}, func(*Env) {}},
		{"keep alive true", map[string]string{contract.EnvKeepAlive: "true"}, func(e *Env) { e.KeepAlive = true }},
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
		{"timeout not a number", map[string]string{contract.EnvTimeout: "1h"}, `TIMEOUT="1h" is not a number of seconds`},
		{"negative timeout", map[string]string{contract.EnvTimeout: "-5"}, "TIMEOUT"},
		{"zero script timeout", map[string]string{contract.EnvScriptTimeout: "0"}, contract.EnvScriptTimeout},
		{"zero grade timeout", map[string]string{contract.EnvGradeTimeout: "0"}, contract.EnvGradeTimeout},
		{"relative results", map[string]string{contract.EnvResults: "results"}, `SSE_RESULTS="results" is not an absolute path`},
		{"difficulty too high", map[string]string{contract.EnvDifficulty: "5"}, `SSE_DIFFICULTY="5" is not a difficulty level: use 0 to 4`},
		{"difficulty not a number", map[string]string{contract.EnvDifficulty: "easy"}, contract.EnvDifficulty},
		{"relative socket", map[string]string{contract.EnvAgentSocket: "sse.sock"}, contract.EnvAgentSocket},
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
