module.exports = {
  images: { unoptimized: true },
};
