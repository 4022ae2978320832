package gateway

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"gopkg.in/yaml.v3"

	"github.com/42-b3yond-6ug/ssebench/internal/suggest"
	"github.com/42-b3yond-6ug/ssebench/internal/yamlerr"
)

// Flavour is an upstream's API flavour: how it authenticates and where the
// token usage of a reply is.
type Flavour string

// The API flavours the gateway speaks.
const (
	// OpenAIChat is the OpenAI-compatible chat completions API
	// (POST {base}/chat/completions), spoken by most providers and local
	// servers. The key goes in Authorization: Bearer.
	OpenAIChat Flavour = "openai-chat"
	// OpenAIResponses is OpenAI's responses API (POST {base}/responses).
	// The key goes in Authorization: Bearer.
	OpenAIResponses Flavour = "openai-responses"
	// AnthropicMessages is Anthropic's messages API
	// (POST {base}/v1/messages). The key goes in x-api-key.
	AnthropicMessages Flavour = "anthropic-messages"
)

// Flavours lists every flavour, in the order the docs give them.
var Flavours = []Flavour{OpenAIChat, OpenAIResponses, AnthropicMessages}

// ParseFlavour parses a flavour name; empty means OpenAIChat.
func ParseFlavour(s string) (Flavour, error) {
	f := Flavour(strings.TrimSpace(s))
	if f == "" {
		return OpenAIChat, nil
	}
	if slices.Contains(Flavours, f) {
		return f, nil
	}
	return "", fmt.Errorf("unknown API flavour %q: want openai-chat, openai-responses or anthropic-messages", s)
}

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	Input  float64 `yaml:"input" json:"input"`
	Output float64 `yaml:"output" json:"output"`
}

// Cost returns the cost in US dollars of a request's usage.
func (p Price) Cost(in, out int64) float64 {
	return (float64(in)*p.Input + float64(out)*p.Output) / 1e6
}

// Upstream is the model API the gateway forwards to.
type Upstream struct {
	// BaseURL is the API's base URL; a request's path is appended to its
	// path, so an agent that would call {BaseURL}/chat/completions calls
	// {gateway}/chat/completions.
	BaseURL *url.URL
	// Key is the real API key, injected into every forwarded request.
	// Empty sends none (a local server that needs no key).
	Key string
	// Flavour says how the key is sent and how usage is read.
	Flavour Flavour
}

// ModelFile is models/<name>.yaml: where a model is served and what it
// costs. Unknown keys are an error.
type ModelFile struct {
	// Name is the model name agents ask for and SSE_MODEL_NAME; the
	// default is the file's base name without .yaml.
	Name string `yaml:"name"`
	// BaseURL is the upstream's base URL (required).
	BaseURL string `yaml:"base_url"`
	// APIKeyEnv names the host environment variable that holds the real
	// key. The default is SSE_API_KEY; "none" sends no key.
	APIKeyEnv string `yaml:"api_key_env"`
	// Flavour is the API flavour; the default is openai-chat.
	Flavour string `yaml:"flavour"`
	// Models are further model names the run may ask for besides Name
	// (a cheaper sibling for summaries, for example).
	Models []string `yaml:"models"`
	// Prices maps a model name to its price; --max-cost needs the price
	// of every model the run allows.
	Prices map[string]Price `yaml:"prices"`
	// MaxOutputTokens is the most output tokens a model of the file
	// writes in one reply: what the gateway sets aside against the run's
	// limits for a request that names no maximum. The default is
	// UnknownMaxOutput.
	MaxOutputTokens int64 `yaml:"max_output_tokens"`
}

// DefaultKeyEnv is the host variable that holds the real key when a model
// file does not name one, and the one used without a model file.
const DefaultKeyEnv = "SSE_API_KEY"

// DefaultBaseURLEnv is the host variable that names the upstream when no
// model file is used.
const DefaultBaseURLEnv = "SSE_BASE_URL"

// LoadModelFile reads and checks a model file.
func LoadModelFile(path string) (*ModelFile, error) {
	data, err := readModelFile(path)
	if err != nil {
		return nil, err
	}
	var m ModelFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("model file %s: %s (keys: name, base_url, api_key_env, flavour, models, prices, max_output_tokens)", path, yamlerr.Message(err))
	}
	if strings.TrimSpace(m.Name) == "" {
		m.Name = strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".yaml"), ".yml")
	}
	if strings.TrimSpace(m.BaseURL) == "" {
		return nil, fmt.Errorf("model file %s: base_url is required", path)
	}
	if _, err := parseBaseURL(m.BaseURL); err != nil {
		return nil, fmt.Errorf("model file %s: %w", path, err)
	}
	if _, err := ParseFlavour(m.Flavour); err != nil {
		return nil, fmt.Errorf("model file %s: %w", path, err)
	}
	if m.MaxOutputTokens < 0 || m.MaxOutputTokens > maxOutputTokens {
		return nil, fmt.Errorf("model file %s: max_output_tokens must be from 1 to %d", path, maxOutputTokens)
	}
	for name, p := range m.Prices {
		if p.Input < 0 || p.Output < 0 {
			return nil, fmt.Errorf("model file %s: the price of %s is negative", path, name)
		}
	}
	return &m, nil
}

// maxModelFile bounds a model file: a few keys and prices a person wrote.
const maxModelFile = 1 << 20

// readModelFile reads path when it is a regular file of at most
// maxModelFile bytes: a FIFO or a device named by mistake must not hang or
// fill memory before the first image is built.
func readModelFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("reading the model file: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil {
		return nil, fmt.Errorf("reading the model file: %w", err)
	} else if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("model file %s is not a regular file (%s): pass a YAML file", path, fi.Mode().Type())
	}
	data, err := io.ReadAll(io.LimitReader(f, maxModelFile+1))
	if err != nil {
		return nil, fmt.Errorf("reading the model file: %w", err)
	}
	if len(data) > maxModelFile {
		return nil, fmt.Errorf("model file %s is larger than %d bytes: a model file holds a few keys and prices", path, maxModelFile)
	}
	return data, nil
}

// FindModelFile returns dir/<name>.yaml (or .yml) when it exists, else "".
func FindModelFile(dir, name string) string {
	if dir == "" || name == "" || strings.ContainsAny(name, `/\`) {
		return ""
	}
	for _, ext := range []string{".yaml", ".yml"} {
		p := filepath.Join(dir, name+ext)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// Config is a resolved model set-up: the upstream, the model names the run
// allows, and their prices.
type Config struct {
	Upstream Upstream
	// Model is the run's model name (SSE_MODEL_NAME); empty when the run
	// names none.
	Model string
	// Allowed are the model names requests may ask for; empty allows any.
	Allowed []string
	// Prices maps model names to prices (from the model file).
	Prices map[string]Price
	// Source says where the set-up came from, for messages: a model
	// file's path, or "SSE_BASE_URL".
	Source string
	// MaxOutput is the most output tokens the models write in one reply
	// (the model file's max_output_tokens); 0: UnknownMaxOutput.
	MaxOutput int64
}

// UnknownMaxOutput is what the gateway sets aside for the output of a
// request that names no maximum, when the model file does not say its
// models' (max_output_tokens): the largest output of the models of 2026
// (128k tokens). Setting aside less let parallel requests without a
// maximum overshoot a limit many times over.
const UnknownMaxOutput = 128_000

// maxOutput is the most a request of q may write: its own maximum, at
// most the models', else the models'.
func (c *Config) maxOutput(asked int64) int64 {
	limit := c.MaxOutput
	if limit <= 0 {
		limit = UnknownMaxOutput
	}
	if asked > 0 && (c.MaxOutput <= 0 || asked < limit) {
		return asked
	}
	return limit
}

// ErrNoUpstream is returned by Resolve when neither a model file nor the
// host's SSE_BASE_URL names an upstream: the run has no model access.
var ErrNoUpstream = errors.New("no model upstream: set SSE_BASE_URL (and SSE_API_KEY) or pass --model with a models/<name>.yaml")

// Resolve works out the run's model set-up. modelFile, when set, is read;
// else model names a file in modelsDir when one exists; else the upstream
// is $SSE_BASE_URL with the key $SSE_API_KEY and the flavour
// $SSE_API_FLAVOUR (default openai-chat). lookup reads the host's
// environment (and .env).
func Resolve(model, modelFile, modelsDir string, lookup func(string) string) (*Config, error) {
	if modelFile == "" {
		modelFile = FindModelFile(modelsDir, model)
	}
	if modelFile != "" {
		m, err := LoadModelFile(modelFile)
		if err != nil {
			return nil, err
		}
		u, _ := parseBaseURL(m.BaseURL)
		f, _ := ParseFlavour(m.Flavour)
		keyEnv := firstNonEmpty(strings.TrimSpace(m.APIKeyEnv), DefaultKeyEnv)
		key := ""
		if keyEnv != "none" {
			if key = lookup(keyEnv); key == "" {
				return nil, fmt.Errorf("model file %s: the API key variable %s is not set on this machine: export it or set api_key_env: none for a server without keys", modelFile, keyEnv)
			}
		}
		if model == "" {
			model = m.Name
		}
		allowed := []string{m.Name}
		for _, n := range append([]string{model}, m.Models...) {
			if !slices.Contains(allowed, n) {
				allowed = append(allowed, n)
			}
		}
		return &Config{
			Upstream: Upstream{BaseURL: u, Key: key, Flavour: f},
			Model:    model, Allowed: allowed, Prices: m.Prices, Source: modelFile,
			MaxOutput: m.MaxOutputTokens,
		}, nil
	}
	base := strings.TrimSpace(lookup(DefaultBaseURLEnv))
	if base == "" {
		return nil, ErrNoUpstream
	}
	u, err := parseBaseURL(base)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", DefaultBaseURLEnv, err)
	}
	f, err := ParseFlavour(lookup("SSE_API_FLAVOUR"))
	if err != nil {
		return nil, fmt.Errorf("SSE_API_FLAVOUR: %w", err)
	}
	c := &Config{Upstream: Upstream{BaseURL: u, Key: lookup(DefaultKeyEnv), Flavour: f}, Model: model, Source: DefaultBaseURLEnv}
	if model != "" {
		c.Allowed = []string{model}
	}
	return c, nil
}

func parseBaseURL(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("base URL %q is not an http(s) URL such as https://api.example.com/v1", s)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u, nil
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

// ModelNames lists the model files of dir by name (without .yaml or
// .yml), sorted; none when dir has none or cannot be read.
func ModelNames(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var names []string
	for _, e := range ents {
		n := e.Name()
		for _, ext := range []string{".yaml", ".yml"} {
			if base, ok := strings.CutSuffix(n, ext); ok && e.Type().IsRegular() && !slices.Contains(names, base) {
				names = append(names, base)
			}
		}
	}
	slices.Sort(names)
	return names
}

// CheckModel refuses, before a run builds anything, a model name that
// names nothing it could reach: modelsDir has model files but none of that
// name, and no SSE_BASE_URL would serve it. Without model files a name is
// only passed to the agent (SSE_MODEL_NAME), as before.
func CheckModel(model, modelsDir string, lookup func(string) string) error {
	if model == "" || FindModelFile(modelsDir, model) != "" || strings.TrimSpace(lookup(DefaultBaseURLEnv)) != "" {
		return nil
	}
	names := ModelNames(modelsDir)
	if len(names) == 0 {
		return nil
	}
	return fmt.Errorf("unknown model %q: did you mean %q? (%s has %s; or set %s to serve it)", model, suggest.Closest(model, names), modelsDir, strings.Join(names, ", "), DefaultBaseURLEnv)
}
