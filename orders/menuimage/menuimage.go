// Package menuimage checks an uploaded menu picture and re-encodes it, so
// what reaches a phone is always a fresh JPEG or PNG written here: no
// metadata (a phone's GPS position), no trailing payload, no file that is
// a picture to one decoder and something else to another. Pure functions,
// no I/O: the HTTP handler runs it before proposing; Apply only stores the
// result.
package menuimage

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"image"
	"image/jpeg"
	"image/png"
	"io"

	"golang.org/x/image/draw"
	"golang.org/x/image/webp"
)

// Limits of API.md and of a box with 1 GiB of memory.
const (
	MaxUploadBytes = 256 << 10 // what a client may send
	MaxStoredBytes = 256 << 10 // what a re-encoded picture may weigh
	// A small file may claim a huge canvas (a decompression bomb): the
	// header is read first and such a picture refused before decoding.
	MaxSide   = 4096
	MaxPixels = 16 << 20
	// Pictures are shown on phones at most ~400 CSS px wide (800 device
	// px): larger ones are scaled down, which keeps snapshots small too.
	MaxShownSide = 800
)

// Errors name what was wrong; the handler answers each with 400
// INVALID_IMAGE.
var (
	ErrTooLarge    = errors.New("picture larger than 256 KiB")
	ErrType        = errors.New("content type is not image/jpeg, image/png or image/webp")
	ErrNotClaimed  = errors.New("content is not the claimed image type")
	ErrUndecodable = errors.New("picture does not decode")
	ErrDimensions  = errors.New("picture dimensions out of range")
)

// Picture is a checked, re-encoded picture.
type Picture struct {
	ContentType string // image/jpeg or image/png
	Data        []byte
	Hash        string // sha256 of Data, lower-case hex
	Width       int
	Height      int
}

// Hash is the content address of data.
func Hash(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

type format struct {
	magic  func([]byte) bool
	config func(io.Reader) (image.Config, error)
	decode func(io.Reader) (image.Image, error)
}

var formats = map[string]format{
	"image/jpeg": {magic: func(b []byte) bool { return len(b) > 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF },
		config: jpeg.DecodeConfig, decode: jpeg.Decode},
	"image/png": {magic: func(b []byte) bool { return bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) },
		config: png.DecodeConfig, decode: png.Decode},
	"image/webp": {magic: func(b []byte) bool {
		return len(b) > 12 && string(b[0:4]) == "RIFF" && string(b[8:12]) == "WEBP"
	}, config: webp.DecodeConfig, decode: webp.Decode},
}

// Process checks that data is a picture of the claimed type (the upload's
// Content-Type) within the limits, and re-encodes it: PNG when it has
// transparency, else JPEG.
func Process(data []byte, claimed string) (Picture, error) {
	if len(data) > MaxUploadBytes {
		return Picture{}, ErrTooLarge
	}
	f, ok := formats[claimed]
	if !ok {
		return Picture{}, ErrType
	}
	if !f.magic(data) {
		return Picture{}, ErrNotClaimed
	}
	cfg, err := f.config(bytes.NewReader(data))
	if err != nil {
		return Picture{}, ErrUndecodable
	}
	if cfg.Width < 1 || cfg.Height < 1 || cfg.Width > MaxSide || cfg.Height > MaxSide || cfg.Width*cfg.Height > MaxPixels {
		return Picture{}, ErrDimensions
	}
	img, err := f.decode(bytes.NewReader(data))
	if err != nil {
		return Picture{}, ErrUndecodable
	}
	for _, side := range []int{MaxShownSide, MaxShownSide * 3 / 4, MaxShownSide / 2} {
		pic, err := encode(fit(img, side))
		if err != nil {
			return Picture{}, err
		}
		if len(pic.Data) <= MaxStoredBytes {
			return pic, nil
		}
	}
	return Picture{}, ErrTooLarge
}

// fit scales img down so neither side exceeds side (never up).
func fit(img image.Image, side int) image.Image {
	b := img.Bounds()
	w, h := b.Dx(), b.Dy()
	if w <= side && h <= side {
		return img
	}
	if w >= h {
		w, h = side, max(1, h*side/w)
	} else {
		w, h = max(1, w*side/h), side
	}
	dst := image.NewRGBA(image.Rect(0, 0, w, h))
	draw.ApproxBiLinear.Scale(dst, dst.Bounds(), img, b, draw.Src, nil)
	return dst
}

type opaquer interface{ Opaque() bool }

func encode(img image.Image) (Picture, error) {
	var buf bytes.Buffer
	ct := "image/jpeg"
	if o, ok := img.(opaquer); ok && !o.Opaque() {
		ct = "image/png"
		if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&buf, img); err != nil {
			return Picture{}, ErrUndecodable
		}
	} else if err := jpeg.Encode(&buf, img, &jpeg.Options{Quality: 82}); err != nil {
		return Picture{}, ErrUndecodable
	}
	b := img.Bounds()
	return Picture{ContentType: ct, Data: buf.Bytes(), Hash: Hash(buf.Bytes()), Width: b.Dx(), Height: b.Dy()}, nil
}
