package menuimage

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"testing"
)

func encodePNG(t testing.TB, img image.Image) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// withCanvas rewrites a PNG's IHDR to claim w×h (with a correct CRC, so
// only the size is wrong).
func withCanvas(p []byte, w, h uint32) []byte {
	p = append([]byte(nil), p...)
	binary.BigEndian.PutUint32(p[16:20], w)
	binary.BigEndian.PutUint32(p[20:24], h)
	binary.BigEndian.PutUint32(p[29:33], crc32.ChecksumIEEE(p[12:29]))
	return p
}

func b64(s string) []byte {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return b
}

func TestProcess(t *testing.T) {
	opaque := image.NewRGBA(image.Rect(0, 0, 40, 30))
	clear := image.NewNRGBA(image.Rect(0, 0, 40, 30))
	for y := 0; y < 30; y++ {
		for x := 0; x < 40; x++ {
			opaque.Set(x, y, color.RGBA{uint8(x * 6), uint8(y * 8), 90, 255})
			clear.Set(x, y, color.NRGBA{200, 10, 10, uint8(x * 6)})
		}
	}
	var j bytes.Buffer
	jpeg.Encode(&j, opaque, nil)
	big := image.NewGray(image.Rect(0, 0, 2000, 1000))
	for _, tc := range []struct {
		name  string
		data  []byte
		ct    string
		err   error
		outCT string
		w, h  int
	}{
		{"jpeg", j.Bytes(), "image/jpeg", nil, "image/jpeg", 40, 30},
		{"opaque png becomes jpeg", encodePNG(t, opaque), "image/png", nil, "image/jpeg", 40, 30},
		{"transparent png stays png", encodePNG(t, clear), "image/png", nil, "image/png", 40, 30},
		{"large scaled to 800", encodePNG(t, big), "image/png", nil, "image/jpeg", 800, 400},
		{"webp (lossy)", b64("UklGRiIAAABXRUJQVlA4IBYAAAAwAQCdASoBAAEADsD+JaQAA3AAAAAA"), "image/webp", nil, "image/jpeg", 1, 1},
		{"png claiming jpeg", encodePNG(t, opaque), "image/jpeg", ErrNotClaimed, "", 0, 0},
		{"jpeg claiming webp", j.Bytes(), "image/webp", ErrNotClaimed, "", 0, 0},
		{"fake webp", []byte("RIFF\x10\x00\x00\x00WEBPVP8 \x00\x00\x00\x00"), "image/webp", ErrUndecodable, "", 0, 0},
		{"svg", []byte("<svg/>"), "image/svg+xml", ErrType, "", 0, 0},
		{"canvas bomb", withCanvas(encodePNG(t, opaque), 20000, 20000), "image/png", ErrDimensions, "", 0, 0},
		{"too many pixels", withCanvas(encodePNG(t, opaque), 4096, 4097), "image/png", ErrDimensions, "", 0, 0},
		{"corrupt body", withCanvas(encodePNG(t, opaque), 41, 30), "image/png", ErrUndecodable, "", 0, 0},
		{"too big", make([]byte, MaxUploadBytes+1), "image/png", ErrTooLarge, "", 0, 0},
	} {
		p, err := Process(tc.data, tc.ct)
		if !errors.Is(err, tc.err) {
			t.Errorf("%s: error %v, want %v", tc.name, err, tc.err)
			continue
		}
		if err != nil {
			continue
		}
		if p.ContentType != tc.outCT || p.Width != tc.w || p.Height != tc.h || p.Hash != Hash(p.Data) || len(p.Data) > MaxStoredBytes {
			t.Errorf("%s: %s %dx%d %d bytes", tc.name, p.ContentType, p.Width, p.Height, len(p.Data))
		}
		// What is stored decodes as what it says it is.
		dec := jpeg.DecodeConfig
		if p.ContentType == "image/png" {
			dec = png.DecodeConfig
		}
		if cfg, err := dec(bytes.NewReader(p.Data)); err != nil || cfg.Width != tc.w {
			t.Errorf("%s: stored picture does not decode: %v", tc.name, err)
		}
	}
}

// FuzzProcess: no input panics or passes as something that does not
// decode.
func FuzzProcess(f *testing.F) {
	f.Add(encodePNG(f, image.NewGray(image.Rect(0, 0, 3, 2))), "image/png")
	f.Add([]byte("RIFF\x10\x00\x00\x00WEBPVP8L"), "image/webp")
	f.Add(b64("UklGRhoAAABXRUJQVlA4TA0AAAAvAAAAEAcQERGIiP4HAA=="), "image/webp")
	f.Fuzz(func(t *testing.T, data []byte, ct string) {
		p, err := Process(data, ct)
		if err != nil {
			return
		}
		if _, _, err := image.Decode(bytes.NewReader(p.Data)); err != nil {
			t.Fatalf("stored picture does not decode: %v", err)
		}
	})
}
