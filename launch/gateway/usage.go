package gateway

import (
	"bytes"
	"encoding/json"
)

// maxLine bounds an event's line the usage reader parses, and a whole
// JSON answer it keeps: a longer one passes through unread.
const maxLine = 4 << 20

// usageReader reads the usage of an answer as it passes: the data lines
// of an event stream, or a whole JSON body.
type usageReader struct {
	family Family
	stream bool
	buf    []byte
	over   bool // the current line (or the body) outgrew maxLine

	usage  Usage
	model  string
	finish string
	whole  bool // the answer's final usage was read
}

func newUsageReader(f Family, stream bool) *usageReader {
	return &usageReader{family: f, stream: stream}
}

// Write takes the answer's next bytes.
func (u *usageReader) Write(p []byte) {
	if !u.stream {
		if !u.over && len(u.buf)+len(p) <= maxLine {
			u.buf = append(u.buf, p...)
		} else {
			u.over, u.buf = true, nil
		}
		return
	}
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			u.add(p)
			return
		}
		u.add(p[:i])
		u.line()
		p = p[i+1:]
	}
}

func (u *usageReader) add(p []byte) {
	if u.over {
		return
	}
	if len(u.buf)+len(p) > maxLine {
		u.over, u.buf = true, nil
		return
	}
	u.buf = append(u.buf, p...)
}

// line reads one complete line of the stream.
func (u *usageReader) line() {
	l := bytes.TrimRight(u.buf, "\r")
	over := u.over
	u.buf, u.over = u.buf[:0], false
	if over {
		return
	}
	data, ok := bytes.CutPrefix(l, []byte("data:"))
	// Only an event that can carry usage, a model or a finish is read:
	// the many others (a stream's deltas) pass unparsed.
	if !ok || !(bytes.Contains(data, []byte(`"usage"`)) || bytes.Contains(data, []byte(`"finish_reason":"`))) {
		return
	}
	u.event(bytes.TrimSpace(data))
}

// result is the answer's usage, model and finish, once it has ended, and
// whether its final usage was read.
func (u *usageReader) result() (Usage, string, string, bool) {
	if u.stream {
		if len(u.buf) > 0 {
			u.line()
		}
	} else if !u.over && len(u.buf) > 0 {
		u.event(u.buf)
	}
	return u.usage, u.model, u.finish, u.whole
}

// wire is every field of an event or an answer the reader takes usage
// from, in either family's format.
type wire struct {
	Type  string     `json:"type"`
	Model string     `json:"model"`
	Usage *wireUsage `json:"usage"`
	// Messages: message_start's message; message_delta's delta; an
	// answer's stop_reason.
	Message    *wire           `json:"message"`
	Delta      json.RawMessage `json:"delta"`
	StopReason string          `json:"stop_reason"`
	// Responses: response.completed's response, and its status.
	Response *wire  `json:"response"`
	Status   string `json:"status"`
	// Chat Completions: the choices' finish reasons.
	Choices []struct {
		FinishReason string `json:"finish_reason"`
	} `json:"choices"`
}

type wireUsage struct {
	// Messages.
	InputTokens         *int64 `json:"input_tokens"`
	OutputTokens        *int64 `json:"output_tokens"`
	CacheCreationTokens *int64 `json:"cache_creation_input_tokens"`
	CacheReadTokens     *int64 `json:"cache_read_input_tokens"`
	// Responses.
	InputDetails *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	// Chat Completions.
	PromptTokens     *int64 `json:"prompt_tokens"`
	CompletionTokens *int64 `json:"completion_tokens"`
	PromptDetails    *struct {
		CachedTokens int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// event reads one event's (or one answer's) JSON.
func (u *usageReader) event(data []byte) {
	var w wire
	if json.Unmarshal(data, &w) != nil {
		return
	}
	switch {
	case w.Message != nil: // message_start
		u.messages(w.Message.Usage)
		if w.Message.Model != "" {
			u.model = w.Message.Model
		}
	case w.Response != nil: // response.completed, .incomplete, .failed
		u.openai(w.Response.Usage)
		u.whole = u.whole || w.Response.Usage != nil
		if w.Response.Model != "" {
			u.model = w.Response.Model
		}
		if w.Response.Status != "" {
			u.finish = w.Response.Status
		}
	default:
		// The final usage: message_delta's (or a whole answer's), a
		// chunk's or answer's of OpenAI's.
		u.whole = u.whole || (w.Usage != nil && (!u.stream || u.family != Messages || w.Type == "message_delta"))
		if u.family == Messages {
			u.messages(w.Usage)
			var d struct {
				StopReason string `json:"stop_reason"`
			}
			if json.Unmarshal(w.Delta, &d) == nil && d.StopReason != "" {
				u.finish = d.StopReason
			}
		} else {
			u.openai(w.Usage)
			if w.Status != "" {
				u.finish = w.Status
			}
			for _, c := range w.Choices {
				if c.FinishReason != "" {
					u.finish = c.FinishReason
				}
			}
		}
		if w.Model != "" {
			u.model = w.Model
		}
		if w.StopReason != "" {
			u.finish = w.StopReason
		}
	}
}

// messages takes a Messages usage: the counts are cumulative, so the
// last of each wins.
func (u *usageReader) messages(w *wireUsage) {
	if w == nil {
		return
	}
	set := func(dst *int64, v *int64) {
		if v != nil && *v >= 0 {
			*dst = *v
		}
	}
	set(&u.usage.Input, w.InputTokens)
	set(&u.usage.Output, w.OutputTokens)
	set(&u.usage.CacheWrite, w.CacheCreationTokens)
	set(&u.usage.CacheRead, w.CacheReadTokens)
}

// openai takes a Responses or Chat Completions usage, whose input counts
// the cached tokens too.
func (u *usageReader) openai(w *wireUsage) {
	if w == nil {
		return
	}
	in, out, cached := w.InputTokens, w.OutputTokens, int64(0)
	if w.InputDetails != nil {
		cached = w.InputDetails.CachedTokens
	}
	if w.PromptTokens != nil {
		in, out = w.PromptTokens, w.CompletionTokens
		if w.PromptDetails != nil {
			cached = w.PromptDetails.CachedTokens
		}
	}
	if in != nil && *in >= 0 {
		cached = min(max(cached, 0), *in)
		u.usage.Input, u.usage.CacheRead = *in-cached, cached
	}
	if out != nil && *out >= 0 {
		u.usage.Output = *out
	}
}
