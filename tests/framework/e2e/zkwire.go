package e2e

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// readZKPacket reads one length-prefixed packet, prefix included.
func readZKPacket(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := int(binary.BigEndian.Uint32(hdr[:]))
	if n < 0 || n > 64<<20 {
		return nil, fmt.Errorf("e2e: zookeeper packet of %d bytes", n)
	}
	pkt := make([]byte, 4+n)
	copy(pkt, hdr[:])
	if _, err := io.ReadFull(r, pkt[4:]); err != nil {
		return nil, err
	}
	return pkt, nil
}

// zkString reads a ZooKeeper string (int32 length, bytes) at the start of
// b; "" when b holds none (requests without a path).
func zkString(b []byte) string {
	if len(b) < 4 {
		return ""
	}
	n := int(int32(binary.BigEndian.Uint32(b)))
	if n < 0 || 4+n > len(b) {
		return ""
	}
	return string(b[4 : 4+n])
}

// connectAsZKSession connects to server as session id (with its password),
// asking for timeoutMs.
func connectAsZKSession(server string, id int64, passwd []byte, timeoutMs int32) (net.Conn, error) {
	conn, err := net.DialTimeout("tcp", server, 5*time.Second)
	if err != nil {
		return nil, err
	}
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	// ConnectRequest: protocolVersion, lastZxidSeen, timeOut, sessionId, passwd, readOnly.
	req := binary.BigEndian.AppendUint32(nil, 0)
	req = binary.BigEndian.AppendUint64(req, 0)
	req = binary.BigEndian.AppendUint32(req, uint32(timeoutMs))
	req = binary.BigEndian.AppendUint64(req, uint64(id))
	req = binary.BigEndian.AppendUint32(req, uint32(len(passwd)))
	req = append(req, passwd...)
	req = append(req, 0)
	if err := writeZKPacket(conn, req); err != nil {
		conn.Close()
		return nil, err
	}
	resp, err := readZKPacket(conn)
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("connect: %w", err)
	}
	if len(resp) < 20 || int64(binary.BigEndian.Uint64(resp[12:])) != id {
		conn.Close()
		return nil, errors.New("the server did not resume the session (expired already?)")
	}
	conn.SetDeadline(time.Time{})
	return conn, nil
}

// closeZKSession connects to server as session id (with its password) and
// closes the session.
func closeZKSession(server string, id int64, passwd []byte) error {
	conn, err := connectAsZKSession(server, id, passwd, 30000)
	if err != nil {
		return err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	// closeSession: xid 1, type -11.
	closeReq := binary.BigEndian.AppendUint32(nil, 1)
	closeReq = binary.BigEndian.AppendUint32(closeReq, uint32(int64(zkOpCloseSession)&0xffffffff))
	if err := writeZKPacket(conn, closeReq); err != nil {
		return err
	}
	if _, err := readZKPacket(conn); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("close: %w", err)
	}
	return nil
}

func writeZKPacket(w io.Writer, payload []byte) error {
	pkt := binary.BigEndian.AppendUint32(nil, uint32(len(payload)))
	_, err := w.Write(append(pkt, payload...))
	return err
}
