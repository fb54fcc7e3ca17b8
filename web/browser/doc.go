// Package browser holds the real-browser tests of the embedded UI
// (web/static): headless Chromium, driven over the DevTools protocol with
// chromedp, against a real hub, bridge and demo agent (internal/testhub).
//
// It has no product code; nothing imports it, and it must not be imported by
// product packages. The tests also regenerate docs/screenshots when
// WHEELHOUSE_SCREENSHOTS names a folder (see docs/ui.md).
package browser
