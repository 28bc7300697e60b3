BROKER = 'amqp://old'
