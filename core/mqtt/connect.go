package mqtt

import (
	"crypto/rand"
	"encoding/hex"
	"net"
	"time"

	"github.com/eclipse/paho.golang/packets"
	"github.com/leafbox/leafbox/core/auth"
)

// anonymous is the identity of every client when there is no
// authenticator; it is never changed.
var anonymous = auth.Identity{Account: auth.GlobalAccount}

func randomClientID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return "leafbox-" + hex.EncodeToString(b[:])
}

// connackFail answers CONNECT with a failure code and ends the connection.
func (c *conn) connackFail(code byte, reason string) error {
	ack := &packets.Connack{ReasonCode: code, Properties: &packets.Properties{}}
	if c.version == version5 && reason != "" {
		ack.Properties.ReasonString = reason
	}
	c.send(ack)
	return &ProtocolError{Code: code, Reason: reason}
}

func (c *conn) handleConnect(p *packets.Connect) error {
	c.version = p.ProtocolVersion
	if c.version == version5 {
		c.more() // topic aliases and the client's limits live there
	}
	props := p.Properties
	c.problemInfo = c.version == version5 && (props.RequestProblemInfo == nil || *props.RequestProblemInfo == 1)
	clean := p.CleanStart
	assigned := ""
	if p.ClientID == "" {
		if c.version == version311 && !clean {
			// [MQTT-3.1.3-8]: CONNACK 0x02, identifier rejected.
			return c.connackFail(codeClientIDInvalid, "empty client id needs clean session")
		}
		p.ClientID = randomClientID()
		assigned = p.ClientID
	}
	c.clientID = p.ClientID

	creds := auth.Credentials{User: p.Username, Pass: string(p.Password)}
	if p.Username == "" && len(p.Password) > 0 {
		// A token is sent as the password without a user name.
		creds = auth.Credentials{Token: string(p.Password)}
	}
	ident := &anonymous
	if a := c.srv.auth.Load().a; a != nil {
		id, err := a.Authenticate(creds, "")
		if err != nil && p.Username != "" && len(p.Password) > 0 {
			// A token in the password field, with any user name (3.1.1
			// allows no password without one), as nats-server's MQTT.
			id, err = a.Authenticate(auth.Credentials{Token: string(p.Password)}, "")
		}
		if err != nil {
			c.srv.st.authFails.Add(1)
			c.srv.log.Info("mqtt authentication failed", "client_id", c.clientID, "remote", c.nc.RemoteAddr().String(), "err", err)
			code := codeNotAuthorized
			if p.UsernameFlag || p.PasswordFlag {
				code = codeBadUserOrPassword
			}
			return c.connackFail(code, "not authorized")
		}
		ident = id
	}
	c.ident = ident

	// Keep alive and its bounds.
	ka := time.Duration(p.KeepAlive) * time.Second
	serverKA := ka
	if mx := c.srv.cfg.MaxKeepAlive; mx > 0 && (ka == 0 || ka > mx) {
		serverKA = mx
	}
	if mn := c.srv.cfg.MinKeepAlive; mn > 0 && ka > 0 && ka < mn {
		serverKA = mn
	}
	if c.version == version311 && serverKA < ka {
		ka = serverKA // hold a 3.1.1 client to the maximum
	} else if c.version == version5 {
		ka = serverKA
	}
	c.keepAlive = ka
	if tc, ok := c.nc.(*net.TCPConn); ok && ka == 0 {
		// No MQTT keep alive: TCP's finds a dead client (Listen leaves it
		// off for the others).
		_ = tc.SetKeepAliveConfig(net.KeepAliveConfig{Enable: true})
	}

	expiry := uint32(0)
	if c.version == version311 {
		if !clean {
			expiry = neverExpires
		}
	} else {
		if props.SessionExpiryInterval != nil {
			expiry = *props.SessionExpiryInterval
		}
		if props.ReceiveMaximum != nil {
			if *props.ReceiveMaximum == 0 {
				return protocolErr("receive maximum 0") // [MQTT-3.1.2-?] §3.1.2.11.3
			}
			c.more().clientReceiveMax = *props.ReceiveMaximum
		}
		if props.MaximumPacketSize != nil {
			if *props.MaximumPacketSize == 0 {
				return protocolErr("maximum packet size 0") // §3.1.2.11.4
			}
			c.more().clientMaxPacket = *props.MaximumPacketSize
		}
	}

	if p.WillFlag {
		w, err := c.buildWill(p)
		if err != nil {
			return c.connackFail(codeTopicNameInvalid, err.Error())
		}
		if ident.Perms != nil && !ident.Perms.CanPublish(w.subj) {
			return c.connackFail(codeNotAuthorized, "will topic not allowed")
		}
		c.more().will = w
	}

	sess, present := c.srv.attach(c, ident, clean, expiry, c.version)
	c.sess = sess

	ack := &packets.Connack{SessionPresent: present, Properties: &packets.Properties{}}
	if c.version == version5 {
		ap := ack.Properties
		rm := uint16(c.srv.cfg.MaxInflight)
		ap.ReceiveMaximum = &rm
		mp := uint32(c.srv.cfg.MaxPacketSize)
		ap.MaximumPacketSize = &mp
		ta := uint16(DefaultTopicAliasMax)
		ap.TopicAliasMaximum = &ta
		one := byte(1)
		ap.RetainAvailable, ap.WildcardSubAvailable, ap.SubIDAvailable, ap.SharedSubAvailable = &one, &one, &one, &one
		if assigned != "" {
			ap.AssignedClientID = assigned
		}
		if serverKA != time.Duration(p.KeepAlive)*time.Second {
			k := uint16(serverKA / time.Second)
			ap.ServerKeepAlive = &k
		}
	}
	// The CONNACK is queued before the session is this connection's (a
	// takeover from now on closes it) and written with what the session
	// sends at once, on this goroutine: it is the first packet the client
	// gets, and the client has it only once the session is attached.
	start := c.queueFirst(ack)
	sess.attachConn(c)
	if start {
		c.writeLoop()
	}
	_ = c.nc.SetReadDeadline(c.readDeadline(time.Now()))
	return nil
}
