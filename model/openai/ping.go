package openai

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crab-testbed/crab/internal/redact"
)

// ErrUnreachable is wrapped by Ping's error: the server did not answer GET
// /models, so no request of a run could succeed.
var ErrUnreachable = errors.New("openai: server does not answer")

// PingTimeout bounds Ping when ctx has no earlier deadline.
const PingTimeout = 10 * time.Second

// Ping asks the server for its model list (GET BaseURL/models, with the
// API key), so that a wrong URL, a server that is down or a refused key is
// found before the first request of a run, not as a run of errors. The
// error wraps ErrUnreachable and names the backend and the URL.
func (b *Backend) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, PingTimeout)
	defer cancel()
	url := strings.TrimRight(b.cfg.BaseURL, "/") + "/models"
	if _, err := b.client.ListModels(ctx); err != nil {
		// The server's answer may echo the Authorization it was sent.
		msg := redact.Truncate(b.mask(err.Error()), maxErrorMessage)
		return fmt.Errorf("%w: model %s: GET %s: %s", ErrUnreachable, b.cfg.Name, redact.URL(url), msg)
	}
	return nil
}
