/** Enough PNG decoding to tell a blank screenshot from a drawn one (8-bit RGB/RGBA, no interlace). */
import { inflateSync } from 'node:zlib';

/**
 * The number of distinct colours in the image, counted on a grid of up to 64 x 64 samples
 * (after undoing the scanline filters). A blank page has one or two.
 */
export function pngColours(png: Buffer): number {
  const width = png.readUInt32BE(16);
  const height = png.readUInt32BE(20);
  const colourType = png[25];
  if (png[24] !== 8 || (colourType !== 2 && colourType !== 6) || png[28] !== 0)
    throw new Error('pngColours: 8-bit RGB or RGBA, not interlaced');
  const bpp = colourType === 6 ? 4 : 3;
  const idat: Buffer[] = [];
  for (let at = 8; at < png.length; ) {
    const len = png.readUInt32BE(at);
    if (png.toString('latin1', at + 4, at + 8) === 'IDAT') idat.push(png.subarray(at + 8, at + 8 + len));
    at += 12 + len;
  }
  const raw = inflateSync(Buffer.concat(idat));
  const stride = width * bpp;
  const pixels = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    for (let x = 0; x < stride; x++) {
      const v = raw[y * (stride + 1) + 1 + x];
      const a = x >= bpp ? pixels[y * stride + x - bpp] : 0;
      const b = y > 0 ? pixels[(y - 1) * stride + x] : 0;
      const c = x >= bpp && y > 0 ? pixels[(y - 1) * stride + x - bpp] : 0;
      const p = a + b - c;
      const paeth =
        Math.abs(p - a) <= Math.abs(p - b) && Math.abs(p - a) <= Math.abs(p - c)
          ? a
          : Math.abs(p - b) <= Math.abs(p - c)
            ? b
            : c;
      const pred = [0, a, b, (a + b) >> 1, paeth][filter];
      pixels[y * stride + x] = (v + pred) & 0xff;
    }
  }
  const colours = new Set<number>();
  const sx = Math.max(1, Math.floor(width / 64));
  const sy = Math.max(1, Math.floor(height / 64));
  for (let y = 0; y < height; y += sy)
    for (let x = 0; x < width; x += sx) {
      const i = y * stride + x * bpp;
      colours.add((pixels[i] << 16) | (pixels[i + 1] << 8) | pixels[i + 2]);
    }
  return colours.size;
}
