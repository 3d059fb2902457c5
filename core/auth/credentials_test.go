package auth_test

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/leafbox/leafbox/core/auth"
	"github.com/leafbox/leafbox/core/require"
)

func TestCredentialsNeverPrintSecrets(t *testing.T) {
	c := auth.Credentials{
		User:  "alice",
		Pass:  "pass-SECRET-1",
		Token: "token-SECRET-2",
		Nkey:  "UPUBLICKEY",
		Sig:   "sig-SECRET-3",
		JWT:   "jwt-SECRET-4",
	}
	secrets := []string{c.Pass, c.Token, c.Sig, c.JWT, "SECRET"}

	var printed []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		printed = append(printed, fmt.Sprintf(verb, c), fmt.Sprintf(verb, &c))
	}
	printed = append(printed,
		fmt.Sprint(c), fmt.Sprint(&c), fmt.Sprintln(c), c.String(),
		fmt.Sprintf("%v", struct{ C auth.Credentials }{c}),
		fmt.Sprintf("%+v", []auth.Credentials{c}),
	)

	var text, js bytes.Buffer
	slog.New(slog.NewTextHandler(&text, nil)).Info("connect", "creds", c)
	slog.New(slog.NewJSONHandler(&js, nil)).Info("connect", "creds", &c)
	slog.New(slog.NewJSONHandler(&js, nil)).Info("connect", slog.Any("creds", c))
	printed = append(printed, text.String(), js.String())

	for _, out := range printed {
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("output %q contains secret %q", out, s)
			}
		}
		if !strings.Contains(out, "alice") || !strings.Contains(out, "UPUBLICKEY") {
			t.Errorf("output %q lacks the user or the nkey", out)
		}
	}
	require.Equal(t, c.String(), `{user="alice" nkey="UPUBLICKEY" pass=set token=set sig=set jwt=set}`)
	require.Equal(t, auth.Credentials{User: "bob"}.String(), `{user="bob" nkey="" pass=unset token=unset sig=unset jwt=unset}`)
	if !strings.Contains(text.String(), "creds.user=alice creds.nkey=UPUBLICKEY creds.pass=true creds.token=true creds.sig=true creds.jwt=true") {
		t.Errorf("text log = %q", text.String())
	}
}
