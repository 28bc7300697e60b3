export async function getServerSideProps() {
  const posts = await fetch('https://cms.internal/posts?limit=50').then(r => r.json());
  return { props: { posts } };
}
