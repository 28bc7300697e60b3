AVATARS = flag('avatars')
